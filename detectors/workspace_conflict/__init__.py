"""Workspace conflicts across sessions: the detector and its rules as pure functions."""
