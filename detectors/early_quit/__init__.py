"""Early quits: the detector and its rules as pure functions."""
