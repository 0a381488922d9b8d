"""Intent drift: the detector, its state objects and its rules."""
