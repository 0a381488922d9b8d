"""Online, per-session trajectory detectors: the contract (:mod:`detectors.base`), the
registry and its built-in list (:mod:`detectors.registry`), calibration, score series and
state copies at the top; one package per detector family (``runaway_loop``,
``intent_drift``, ``egress_gaming``, ``compliance``) and one module per single-module
detector. No I/O, no wall clock."""
