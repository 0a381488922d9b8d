"""``trajwatch bench``: what the service costs, measured on realistic agent spans."""
