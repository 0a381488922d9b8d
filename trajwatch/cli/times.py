"""Times a user types: ``--since 2026-11-30``, ``--since 2026-11-30T08:00Z``, ``--since 6h``."""

from __future__ import annotations

import datetime as dt
import re

from models.errors import ConfigError

_AGO = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, *, now: dt.datetime, flag: str = "--since") -> int:
    """``text`` as event-time nanoseconds since the epoch: an ISO 8601 date or time (UTC
    unless it names an offset), or a span back from ``now`` (``90m``, ``6h``, ``2d``, ``1w``).
    Raises ConfigError saying which forms are accepted."""
    text = text.strip()
    ago = _AGO.fullmatch(text)
    if ago:
        moment = now - dt.timedelta(seconds=int(ago[1]) * _UNIT_SECONDS[ago[2]])
    else:
        try:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"{flag} {text!r} is no time; give an ISO date or time (2026-11-30, "
                "2026-11-30T08:00Z) or a span back from now (90m, 6h, 2d, 1w)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1_000
