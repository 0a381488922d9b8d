"""Pure functions and small online state that turn a step's facts into features, in
packages imported in one order (each only imports those before it): :mod:`features.redact`
← :mod:`features.text` ← :mod:`features.egress` ← :mod:`features.calls` ←
:mod:`features.session` ← :mod:`features.policy` ← :mod:`features.prices`. No I/O, no wall
clock."""
