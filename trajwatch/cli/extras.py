"""Commands whose dependencies are an extra: one line saying which extra to install."""

from __future__ import annotations

import importlib.util

from models.errors import ConfigError


def require_extra(module: str, *, extra: str, command: str) -> None:
    """Raise ConfigError (one line, exit 2) if ``module`` of the ``extra`` that ``command``
    needs is not installed; return otherwise."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        found = False
    if not found:
        raise ConfigError(
            f"trajwatch {command} needs the `{extra}` extra ({module} is not installed); "
            f"pip install 'trajwatch[{extra}]'"
        )
