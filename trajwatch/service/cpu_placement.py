"""Keeping a process's threads on one CPU.

``serve`` runs its Python work in threads that take turns on the interpreter lock: the
event loop (each request, each answer), the pipeline thread, the log's syncer. Left to
the OS, they run on different CPUs, and every hand-over of the lock moves the
interpreter's hot state (reference counts of shared objects, the type and method caches,
the allocator's pools) from one CPU's cache to the other's, and wakes a sleeping thread
on another CPU (an inter-processor interrupt: a VM exit on a virtual machine). Because
of the lock, a second CPU adds almost nothing to the Python work, so on one CPU the same
requests cost less. ``benchmarks/bench_serve_phases.py --cpu all,auto`` (the benchmark's
20,000 spans, three passes, a 2-core machine): serve's CPU seconds 4.6-5.0 with the OS's
placement, 3.9-4.4 on one CPU (its event loop's 0.32-0.39 and 0.23-0.27), and serve ÷
replay by wall time 0.73-0.86 and 0.83-0.95.

The other CPUs stay free for everything else on the host (the agents, their exporters,
the database server). What runs outside the lock (SQLite's and zlib's C code, fsync)
loses a CPU to overlap with; the measurement includes that.

Several processes on one host (``trajwatch worker``s in one consumer group) must not
all land on one CPU, which the OS could no longer undo: :func:`place` pins only where
asked (the ``cpu`` setting: ``auto`` pins ``serve``, one per host; a number pins
``serve`` or a worker).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from models.errors import ConfigError

__all__ = ["AUTO", "UNPINNED", "check_choice", "place"]

log = logging.getLogger("trajwatch.cpu")

AUTO = "auto"
"""Pin ``serve`` to the CPU it started on; leave a worker to the OS."""
UNPINNED = "all"
"""Never pin: every CPU the process may use, placed by the OS."""


def check_choice(choice: str) -> bool:
    """``choice`` is ``auto``, ``all`` or a CPU number (what the setting accepts)."""
    return choice in (AUTO, UNPINNED) or choice.isdigit()


def place(choice: str, *, single: bool) -> int | None:
    """Pin every thread of this process (and the threads it starts later, which inherit
    it) to one CPU, as ``choice`` says; the CPU, or None when left to the OS.

    ``single``: this process is the one pipeline on its host (``serve``), so ``auto``
    pins it to the CPU it runs on now. A process that may use a single CPU only, or a
    platform without thread affinity (not Linux), is left as it is under ``auto``; an
    explicit CPU it cannot use raises :class:`ConfigError`."""
    if choice == UNPINNED or (choice == AUTO and not single):
        return None
    if not hasattr(os, "sched_setaffinity"):
        if choice == AUTO:
            return None
        raise ConfigError(
            f"TRAJWATCH_CPU={choice}: this platform cannot pin threads to a CPU; "
            f"set TRAJWATCH_CPU={AUTO} or {UNPINNED}"
        )
    allowed = os.sched_getaffinity(0)
    if choice == AUTO:
        if len(allowed) < 2:
            return None
        cpu = _current_cpu()
        cpu = cpu if cpu in allowed else min(allowed)
    else:
        cpu = int(choice)
        if cpu not in allowed:
            raise ConfigError(
                f"TRAJWATCH_CPU={choice}: this process may run on CPUs "
                f"{', '.join(map(str, sorted(allowed)))} only; set one of them, "
                f"{AUTO} or {UNPINNED}"
            )
    for thread in _threads():
        try:
            os.sched_setaffinity(thread, {cpu})
        except ProcessLookupError:  # the thread ended meanwhile
            continue
        except OSError as exc:  # a container that forbids it: run unpinned, and say so
            log.warning("could not keep the threads on CPU %d (%s); running unpinned", cpu, exc)
            return None
    return cpu


def _threads() -> list[int]:
    """The ids of this process's threads (Linux: /proc/self/task); 0 (the calling thread)
    where that is not readable."""
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def _current_cpu() -> int | None:
    """The CPU the calling thread last ran on (field 39 of /proc/thread-self/stat), or
    None where that is not readable."""
    try:
        fields = Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[36])
    except (OSError, IndexError, ValueError):
        return None
