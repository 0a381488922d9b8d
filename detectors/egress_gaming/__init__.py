"""Egress-based specification gaming and exfiltration: the detector and its rules."""
