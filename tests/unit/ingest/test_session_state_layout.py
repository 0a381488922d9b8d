"""A checkpoint of an earlier state layout (version 2: ``intent_drift``'s and
``egress_gaming``'s state as ~45 and ~30 flat attributes, before they were grouped by
concern) still resumes its session exactly:
:func:`ingest.pipeline.session_state.load_state` keeps its session facts, drops its analysis,
and the pipeline rolls the session forward from its first stored step - the same
later alerts and the same detector state as a session that never stopped."""

from __future__ import annotations

import pickle
import zlib
from pathlib import Path
from typing import Any

import pytest

from detectors.testing import Session
from features.session.compaction import CompactionInference
from features.session.trajectory import TrajectoryFeatures
from features.text.clip import analysed_step
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.session import read_stored, restore
from ingest.pipeline.session_state import VERSION, dump_state, load_state
from models.records import SessionInfo, Step
from models.store import SessionCursor, Store
from tests.support.paths import ROOT
from trajwatch.bench.hashes import canonical
from trajwatch.config import detector_set, load_config

CONFIG = ROOT / "trajwatch.toml"


def drifting_steps() -> list[Step]:
    """A session that leaves its task for a foreign repository (intent_drift's doctest)."""
    s = Session(
        "layout",
        goal="Fix the date parser in src/dates/parse.py and add a test",
        workspace="/work/dates",
    )
    steps = [s.start()]
    steps += s.tool(
        "bash",
        {"command": "rg -n parse src tests"},
        result="src/dates/parse.py:3\ntests/test_parse.py:9",
    )
    for path in ["src/dates/parse.py", "tests/test_parse.py", "src/dates/util.py"]:
        steps += s.tool("read_file", {"path": path})
    steps += s.tool("bash", {"command": "git clone https://github.com/other/payments /tmp/pay"})
    for path in ["/tmp/pay/billing/invoice.go", "/tmp/pay/billing/tax.go", "/tmp/pay/README.md"]:
        steps += s.tool("read_file", {"path": path})
    return [analysed_step(step) for step in steps]


def version_2_state(info: SessionInfo, upto: int, old_drift: dict[str, Any]) -> bytes:
    """The bytes main's ``dump_state`` wrote (layout 2), its analysis holding
    ``intent_drift``'s state in the old flat layout."""
    # egress_gaming's flat attributes, regrouped like intent_drift's in the same version
    old_egress: dict[str, Any] = {
        "_goal": "",
        "_trusted": "",
        "_repo": None,
        "_calls": {},
        "_fired": [],
    }
    detectors = {"intent_drift": old_drift, "egress_gaming": old_egress}
    analysis = {"features": TrajectoryFeatures(), "detectors": detectors}
    payload = {
        "v": 2,
        "info": info,
        "compaction": CompactionInference(),
        "turns": {},
        "upto": upto,
        "analysis": zlib.compress(pickle.dumps(analysis), 1),
    }
    return zlib.compress(pickle.dumps(payload), 0)


def test_an_earlier_layouts_checkpoint_rolls_the_session_forward_from_its_start(
    tmp_path: Path,
) -> None:
    steps = drifting_steps()
    cut = 6  # the checkpoint reflects the steps below it; the drift comes after
    detectors = detector_set(load_config(CONFIG))
    live = detectors.for_session()
    features = TrajectoryFeatures()
    later: list[str] = []
    for step in steps:
        features.observe(step)
        alerts = [a for d in live for a in d.update(step)]
        if step.seq >= cut:
            later += [a.alert_id for a in alerts]
    assert later, "the drift must alert after the cut"

    # what main's IntentDrift kept (a few of its flat attributes): names the regrouped
    # detector no longer has, which it must not be handed
    old_drift = {
        "_goal": "Fix the date parser",
        "_goal_words": {"date", "parser"},
        "_episode": [],
        "_ep_weight": 0.0,
        "_calls": 3,
        "_informed": True,
    }
    info = SessionInfo(session_id="layout")
    data = version_2_state(info, cut, old_drift)
    state = load_state(data)
    assert state is not None and state.upto == 0 and state.detectors == {}
    assert state.info == info and state.analysis is None

    with Store.open(f"sqlite:///{tmp_path / 'layout.db'}") as store:
        pipeline = Pipeline(store, detectors=detectors)
        cursor = SessionCursor(session_id="layout", next_seq=cut, state=data)
        fed: list[tuple[int, int]] = []

        def stored(start: int, end: int) -> list[Step]:
            fed.append((start, end))
            return steps[start:end]

        session = restore(read_stored(cursor, stored), pipeline.detectors, pipeline.settings)
        assert fed == [(0, cut)]  # rolled forward from the session's first step
        resumed = [
            a.alert_id for step in steps[cut:] for d in session.detectors for a in d.update(step)
        ]
        pipeline.close()
    assert resumed == later
    assert canonical([d.state_dict() for d in session.detectors]) == canonical(
        [d.state_dict() for d in live]
    )


def test_a_state_of_this_version_resumes_from_its_checkpoint() -> None:
    info = SessionInfo(session_id="now")
    data = dump_state(info=info, compaction=CompactionInference(), turns={}, analysis=None, upto=4)
    state = load_state(data)
    assert state is not None and state.upto == 4 and VERSION == 13


@pytest.mark.parametrize("version", [4, 5, 6, 7, 8, 9, 10, 11, 12])
def test_an_earlier_state_keeps_its_facts_and_rolls_forward_from_the_start(version: int) -> None:
    """Version 5 changed detectors' state (runaway_loop's records, intent_drift's log,
    duplicate_side_effect's ledger), version 6 egress_gaming's address ledger (the values
    fetched from outside the task), version 7 intent_drift's log (the objects on-task
    calls touched, the records that carried a planted passage), version 8 its foreign
    passages (the values they give), version 9 runaway_loop's records (the count a
    failure reports), version 10 compliance_decay's approval habits, version 11
    intent_drift's log (the records a listing passed over) and runaway_loop's (user
    turns, each call's answer), version 12 intent_drift's log (identifiers results showed,
    records nothing showed that the agent read), version 13 its task (the calls reading a
    project's CLAUDE.md / AGENTS.md): an earlier checkpoint's analysis is not used."""
    info = SessionInfo(session_id=f"v{version}")
    data = dump_state(info=info, compaction=CompactionInference(), turns={}, analysis=None, upto=9)
    payload = pickle.loads(zlib.decompress(data))
    payload["v"] = version
    state = load_state(zlib.compress(pickle.dumps(payload)))
    assert state is not None and state.info == info
    assert state.upto == 0 and state.detectors == {} and state.analysis is None


def test_a_version_3_state_naming_the_modules_before_the_move_keeps_its_session_facts() -> None:
    info = SessionInfo(session_id="moved")
    data = dump_state(
        info=info, compaction=CompactionInference(), turns={"t": 1}, analysis=None, upto=4
    )
    payload = pickle.loads(zlib.decompress(data))
    payload["v"] = 3
    # protocol 2 names a class as "module\nname\n" text: the pickle a version-3 service
    # wrote is this one with the module named as it was before the move
    raw = pickle.dumps(payload, protocol=2)
    assert b"features.session.compaction\n" in raw
    old = raw.replace(b"features.session.compaction\n", b"features.compaction\n")
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(old)
    state = load_state(zlib.compress(old, 0))
    assert state is not None and state.info == info and state.turns == {"t": 1}
    assert isinstance(state.compaction, CompactionInference)
    assert state.upto == 0 and state.detectors == {}  # its analysis is rolled forward


def test_a_state_of_an_unknown_version_is_ignored() -> None:
    assert load_state(zlib.compress(pickle.dumps({"v": 99, "info": None}), 0)) is None
