"""Stalled runs: the detector and its rules as pure functions."""
