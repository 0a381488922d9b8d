"""Runaway loops: the detector and its rules as pure functions."""
