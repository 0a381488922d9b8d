"""A live session's state as the bytes the store keeps beside its cursor.

What a session needs to continue exactly where it stopped is written in the same
transaction as the steps, alerts and input offsets it reflects (``sessions.state``), in
two parts:

- the **session facts** — the session info learnt so far, the compaction inference and
  the conversation's turns: small, written whole with every commit that touches the
  session;
- the **analysis** — the detectors' state (:meth:`detectors.base.Detector.snapshot`) and
  the trajectory features: tens of KB by a long run's end and ~3 ms to pickle, so it is a
  *checkpoint*, written only now and then (the pipeline's ``checkpoint_steps``), together
  with ``upto``: the seq of the first step it does not reflect.

The analysis of a step is a pure function of the step as stored (the detectors and the
features see the placed step, and the store gives it back field for field), so the
steps stored at or past ``upto`` are the rest of the state: a session reopened from the
store (a restart, a rebalance, an eviction) is rolled forward by feeding them to the
restored detectors and features (:func:`roll_forward`), and continues as if it had never
stopped — the same later steps, the same later alerts. Nothing about what is stored or
dropped as a duplicate changes: the steps were stored and judged the first time.

The encoding is pickle (the state dicts are "picklable plain data" by contract),
compressed. It is read only from the project's own store, which is trusted like the
code; a state written by another detector configuration keeps the state of the
detectors both configurations have (by name) and starts the others fresh.
"""

from __future__ import annotations

import io
import pickle
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from detectors.base import Detector
from detectors.score_series import ScoreRecorder
from features.session.compaction import CompactionInference
from features.session.trajectory import TrajectoryFeatures
from features.text.clip import analysed_step
from ingest.pipeline.event_order import BEFORE_ALL, OrderKey
from models.records import SessionInfo, Step

VERSION = 13
"""Bumped when the layout below or a detector's state layout changes (the analysis is
pickled detector objects' state: a detector regrouping its attributes changes it). A
state of an earlier version keeps its session facts and drops its analysis: the session
is rolled forward from its first stored step (:func:`load_state`), which gives the
analysis a checkpoint of this version would have held - the analysis of a step is a pure
function of the steps stored. Version 12: intent_drift's log gained the identifiers
results showed and the records nothing showed that the agent read, the policy detectors
the project's instructions file the agent read. Version 11: intent_drift's log gained
the records an on-task listing passed over, runaway_loop the user turns it read and each
call's answer. Version 10: compliance_decay gained the actions the agent
asked approval for (its approval habits). Version 9: runaway_loop's records gained the
count a failure reports (``tally``). Version 8: intent_drift's foreign passages gained
the distinctive values they give (a price, a code, a tag). Version 7: intent_drift's log
gained the objects on-task calls touched, the ids recent calls named and the records
that carried a planted passage. Version 6: egress_gaming's address ledger gained the
calls to hosts the task does not name and the values they fetched. Version 5:
runaway_loop's records gained what a repeat ran and whether its failure was news,
intent_drift's log the foreign passages and the agent's own words, duplicate_side_effect
the effects a predecessor completed. Version 4: the modules moved into family packages
(``features.compaction`` is now :mod:`features.session.compaction`, and the detectors'
records moved likewise), so a pickle of version 3 names modules that no longer exist:
:class:`_Unpickler` reads its session facts under the new names. Version 3:
``intent_drift``'s and ``egress_gaming``'s state grouped by concern
(:mod:`detectors.intent_drift.task`, :mod:`detectors.egress_gaming.task` and their
siblings); version 2: the analysis a checkpoint written now and then; version 1: the
analysis written at every commit."""


@dataclass(slots=True)
class SessionState:
    info: SessionInfo
    compaction: CompactionInference
    features: TrajectoryFeatures
    turns: dict[str, int]
    order: tuple[OrderKey, bool]
    """The session's last in-order place and whether it is unsettled
    (:attr:`~ingest.pipeline.session.LiveSession.last_key`, ``unsettled``); a state written
    before these were kept reads ``(BEFORE_ALL, False)``."""
    detectors: dict[str, dict[str, Any]]
    """Each detector's ``state_dict()``, by detector name."""
    upto: int
    """The analysis reflects the session's steps below this seq; the steps from here on
    are rolled forward (from 0 for a state of an earlier version)."""
    analysis: bytes | None
    """The analysis checkpoint as stored, written again unchanged until the next one."""


def dump_analysis(*, features: TrajectoryFeatures, detectors: Sequence[Detector]) -> bytes:
    """The checkpoint of a session's analysis (one pickle: objects shared inside it stay
    shared)."""
    payload = {
        "features": features,
        # snapshots, not state_dict(): the pickle below is the copy (see Detector.snapshot)
        "detectors": {d.name: d.snapshot() for d in detectors},
    }
    return zlib.compress(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL), 1)


def dump_state(
    *,
    info: SessionInfo,
    compaction: CompactionInference,
    turns: dict[str, int],
    analysis: bytes | None,
    upto: int,
    order: tuple[OrderKey, bool] = (BEFORE_ALL, False),
) -> bytes:
    """The bytes of a session's state: its facts now, and ``analysis``
    (:func:`dump_analysis`; None: fresh detectors and features) reflecting its steps below
    ``upto``. The analysis is already compressed: it is stored as it is, not compressed
    again at every commit."""
    payload = {
        "v": VERSION,
        "info": info,
        "compaction": compaction,
        "turns": turns,
        "order": order,
        "upto": upto,
        "analysis": analysis,
    }
    return zlib.compress(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL), 0)


_MOVED_MODULES = {
    "features.compaction": "features.session.compaction",
    "features.trajectory": "features.session.trajectory",
    "features.clusters": "features.session.clusters",
    "features.subgoals": "features.session.subgoals",
}
"""Modules a state of version 3 or older names, and where they live now: the session
facts of such a state (its compaction inference) are read under the new names."""


class _Unpickler(pickle.Unpickler):
    """Reads the project's own pickles, mapping the modules of :data:`_MOVED_MODULES`."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED_MODULES.get(module, module), name)


def _unpickle(data: bytes) -> Any:
    return _Unpickler(io.BytesIO(zlib.decompress(data))).load()


def load_state(data: bytes) -> SessionState | None:
    """What :func:`dump_state` wrote; for a state of an earlier version (1 to 9), its
    session facts with a fresh analysis reflecting no step (``upto`` 0: the caller rolls
    the session forward from its first stored step); None for anything else."""
    payload = _unpickle(data)  # the project's own store
    if not isinstance(payload, dict):
        return None
    version = payload.get("v")
    stored: bytes | None = payload.get("analysis") if version == VERSION else None
    if version == VERSION and stored is not None:
        analysis: dict[str, Any] = _unpickle(stored)
        upto: int = payload["upto"]
    elif version in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, VERSION):
        # no checkpoint yet, or one of another layout: the detectors' pickled state
        # may not fit the code that loads it, so none of it is used
        analysis = {"features": TrajectoryFeatures(), "detectors": {}}
        upto = payload["upto"] if version == VERSION else 0
    else:
        return None
    return SessionState(
        info=payload["info"],
        compaction=payload["compaction"],
        features=analysis["features"],
        turns=payload["turns"],
        order=payload.get("order", (BEFORE_ALL, False)),
        detectors=analysis["detectors"],
        upto=upto,
        analysis=stored,
    )


def roll_forward(
    steps: Iterable[Step],
    features: TrajectoryFeatures,
    detectors: Sequence[Detector],
    scores: ScoreRecorder | None = None,
) -> int:
    """Feed stored ``steps`` (in seq order, those past the checkpoint) to a restored
    session's ``features`` and ``detectors`` as the pipeline fed them when it placed them
    (:func:`ingest.pipeline.sequencing.place` and
    :meth:`ingest.pipeline.engine.Pipeline._release`); their alerts were stored
    with them and are dropped here, as is a detector's error (dead-lettered the first
    time). With ``scores`` (recording ``detectors``, from the checkpoint) they are fed
    through it, so it records what they report after each step, as the first time.
    Returns the number of steps fed."""
    fed = 0
    for step in steps:
        view = analysed_step(step)
        features.observe(view)
        if scores is not None:
            scores.judge(view, [], _ignored)
        else:
            for detector in detectors:
                try:
                    detector.update(view)
                except Exception:  # dead-lettered when the step was first judged
                    continue
        fed += 1
    return fed


def _ignored(detector: Detector, error: Exception) -> None:
    """A detector's error on a step rolled forward: dead-lettered the first time."""
