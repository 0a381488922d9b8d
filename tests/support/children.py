"""The child Python processes a test starts, for the guard that keeps them out of the quick
loop (``-m "not slow"``): a ``trajwatch`` command, a fixture script or a fresh interpreter
costs a second or more of imports before it does anything."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PYTHONS = {Path(sys.executable).name, "python", "python3"}


def is_python(args: Any) -> bool:
    """Whether a ``Popen`` argument list (or command string) runs a Python interpreter."""
    if isinstance(args, str | bytes | os.PathLike):
        first = os.fsdecode(args).split()[0] if os.fsdecode(args).split() else ""
    elif isinstance(args, Sequence) and args:
        first = os.fsdecode(args[0])
    else:
        return False
    return first == sys.executable or Path(first).name in PYTHONS


@contextmanager
def python_children() -> Iterator[list[str]]:
    """Record, in the yielded list, each child Python process started meanwhile (its
    command line, shortened), in any thread."""
    started: list[str] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        if is_python(args):
            shown = args if isinstance(args, str) else " ".join(map(os.fsdecode, args))
            started.append(shown[:160])
        real(self, args, *rest, **options)

    subprocess.Popen.__init__ = spy  # type: ignore[method-assign]
    try:
        yield started
    finally:
        subprocess.Popen.__init__ = real  # type: ignore[method-assign]
