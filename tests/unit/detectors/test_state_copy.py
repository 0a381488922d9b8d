"""detectors.state_copy.deepcopy builds the graph copy.deepcopy builds: compared by the
pickle bytes (which encode sharing) on real sessions' detector state and on shapes that
exercise sharing, kept objects and cycles."""

from __future__ import annotations

import copy
import heapq
import pickle
from collections import deque
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from detectors.state_copy import deepcopy
from ingest.formats.table import delivered
from ingest.pipeline.engine import Pipeline
from ingest.sources.files import ReadStats, read_recordings
from models.records import Step, StepKind
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.config import detector_set, load_config
from trajwatch.settings import Settings


def same_copy(x: object) -> None:
    ours, theirs = deepcopy(x), copy.deepcopy(x)
    assert pickle.dumps(ours, protocol=5) == pickle.dumps(theirs, protocol=5)
    assert ours is not x or isinstance(x, tuple)


@dataclass(frozen=True, slots=True)
class Frozen:
    a: object
    b: object = None


class Plain:
    def __init__(self, value: object) -> None:
        self.value = value


@dataclass(slots=True)
class Slotted:
    a: object
    b: object = None


class Both(Slotted):
    def __init__(self, a: object) -> None:
        super().__init__(a)
        self.extra = [a]


class Sub(dict[str, object]):
    pass


class Point(NamedTuple):
    x: object
    y: object


def test_sharing_and_kept_objects_as_copy_deepcopy() -> None:
    shared = {"k": [1, 2]}
    step = Step(step_id="s/1", session_id="s", kind=StepKind.TOOL_CALL, ts=1, detail=shared)
    ring: list[object] = []
    ring.append(ring)
    holder: list[object] = []
    cyclic = (holder,)
    holder.append(cyclic)
    for value in (
        {"x": shared, "y": shared, "z": (shared, "t", 3)},
        [step, step, Frozen(step, shared), Frozen("only atoms")],
        (1, "a", None, 2.5),
        {"ring": ring, "cyclic": cyclic},
        {"deque": deque([shared, step], maxlen=4), "set": {"a", "b"}, "plain": Plain(shared)},
        [StepKind.TOOL_CALL, frozenset({"x"}), Frozen(Plain([shared]), ring)],
        [Slotted(shared, step), Slotted(ring), Both(shared), Plain(None), Sub(a=shared)],
        [Point(shared, 1), Point(1, 2), deque([frozenset(), set()]), {(1, 2): frozenset({3})}],
    ):
        same_copy(value)


def test_real_detector_state_copies_the_same() -> None:
    recordings = sorted((ROOT / "fixtures" / "recorded").glob("run-00[0-5]-*"))
    assert recordings, "fixtures/recorded is part of the repository"
    config = load_config(ROOT / "trajwatch.toml")
    store = Store.open("sqlite://")
    try:
        pipeline = Pipeline(store, settings=Settings(), detectors=detector_set(config))
        for partition, files in read_recordings(recordings, ReadStats()):
            timed = [delivered(records, pipeline.settings) for records in files]
            for _, feed in heapq.merge(*timed, key=itemgetter(0)):
                feed(pipeline)
            pipeline.end_partition(partition)
        pipeline.commit()
        checked = 0
        for session in pipeline._sessions.values():
            views = {d.name: d.snapshot() for d in session.detectors}
            same_copy(views)
            checked += len(views)
        assert checked >= 8
    finally:
        store.close()
