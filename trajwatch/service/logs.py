"""Where a long-running command's log lines go: stderr, one line each, named.

``serve`` prints alerts to stdout; everything else it has to say — an action that could
not be delivered, a pipeline that stopped — is a log line on stderr, as
``trajwatch serve: ERROR kill of session 's1' NOT DELIVERED ...``.
"""

from __future__ import annotations

import logging
import sys


def log_to_stderr(command: str) -> None:
    """trajwatch's own log lines from INFO up, other libraries' from WARNING up, on stderr
    as ``trajwatch COMMAND: LEVEL message``. Does nothing when the root logger already
    has a handler (an embedding application configured logging itself)."""
    if logging.getLogger().handlers:
        return
    logging.basicConfig(
        level=logging.WARNING,
        format=f"trajwatch {command}: %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("trajwatch").setLevel(logging.INFO)
