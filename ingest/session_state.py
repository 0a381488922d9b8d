"""A live session's state as the bytes the store keeps beside its cursor.

What a session needs to continue exactly where it stopped — its detectors' state
(:meth:`detectors.base.Detector.state_dict`), the compaction inference, the trajectory
features, the conversation's turns and the session facts learnt so far — is written in
the same transaction as the steps, alerts and input offsets it reflects
(``sessions.state``). A worker handed the session after a restart or a rebalance loads it
and carries on as if it had never stopped: the same later steps, the same later alerts.

The encoding is pickle (the state dicts are "picklable plain data" by contract),
compressed. It is read only from the project's own store, which is trusted like the
code; a state written by another detector configuration keeps the state of the
detectors both configurations have (by name) and starts the others fresh.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from detectors.base import Detector
from features.compaction import CompactionInference
from features.trajectory import TrajectoryFeatures
from models.records import SessionInfo

VERSION = 1
"""Bumped when the layout below changes; a state of another version is ignored (the
session then continues with fresh detectors, as before state was kept)."""


@dataclass(slots=True)
class SessionState:
    info: SessionInfo
    compaction: CompactionInference
    features: TrajectoryFeatures
    turns: dict[str, int]
    detectors: dict[str, dict[str, Any]]
    """Each detector's ``state_dict()``, by detector name."""


def dump_state(
    *,
    info: SessionInfo,
    compaction: CompactionInference,
    features: TrajectoryFeatures,
    turns: dict[str, int],
    detectors: Sequence[Detector],
) -> bytes:
    """The bytes of a session's state (one pickle: objects shared inside it stay shared)."""
    payload = {
        "v": VERSION,
        "info": info,
        "compaction": compaction,
        "features": features,
        "turns": turns,
        # snapshots, not state_dict(): the pickle below is the copy (see Detector.snapshot)
        "detectors": {d.name: d.snapshot() for d in detectors},
    }
    return zlib.compress(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL), 1)


def load_state(data: bytes) -> SessionState | None:
    """What :func:`dump_state` wrote; None for a state of another version."""
    payload = pickle.loads(zlib.decompress(data))  # the project's own store
    if not isinstance(payload, dict) or payload.get("v") != VERSION:
        return None
    return SessionState(
        info=payload["info"],
        compaction=payload["compaction"],
        features=payload["features"],
        turns=payload["turns"],
        detectors=payload["detectors"],
    )
