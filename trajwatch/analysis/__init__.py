"""The notebooks' toolkit and ``trajwatch eval``: evaluation, tuning, incidents, figures."""
