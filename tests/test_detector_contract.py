"""One contract test over every registered detector (river's `checks`, scikit-learn's
`parametrize_with_checks`): fresh clones, state round-trips, quiet warm-up, tolerance of
sparse steps, bounded state, determinism."""

from __future__ import annotations

import copy
import pickle
import random
from pathlib import Path

import pytest

from detectors.base import Detector
from detectors.registry import REGISTRY, load_builtin
from detectors.testing import Session
from models.records import Alert, Step
from trajwatch.config import detector_set, load_config

load_builtin()
NAMES = sorted(REGISTRY)
MAX_STATE_BYTES = 64 * 1024


def long_session(n_iterations: int, seed: int = 0) -> list[Step]:
    """A long, busy session touching every step kind: varied work, repeats, failures,
    egress, approvals, checkpoints, compactions."""
    rng = random.Random(seed)
    s = Session(
        f"contract-{seed}",
        goal="Fix the date parsing bug in src/dates.py and add tests",
        policy_id="coding-strict-v1",
        repository="github.com/acme/dates",
        budget={"tokens": 10_000_000, "tool_calls": 100_000},
    )
    steps = [s.start()]
    tokens = 10_000
    for i in range(n_iterations):
        tokens = 10_000 if tokens > 150_000 else tokens + rng.randint(500, 3_000)
        steps.append(
            s.model(tokens_in=tokens, text=f"step {i}: looking at module {rng.randint(0, 50)}")
        )
        r = rng.random()
        if r < 0.3:
            steps += s.tool(
                "read_file", {"path": f"src/mod{rng.randint(0, 400)}.py"}, result="x" * 50
            )
        elif r < 0.5:
            steps += s.tool(
                "bash",
                {"command": "pytest -q"},
                ok=rng.random() < 0.7,
                result=f"{rng.randint(0, 99)} passed",
            )
        elif r < 0.6:
            call, done = s.tool("bash", {"command": f"curl -s https://pypi.org/simple/p{i % 97}/"})
            steps += [call, s.egress(f"https://pypi.org/simple/p{i % 97}/", parent=call), done]
        elif r < 0.7:
            steps += s.tool("edit_file", {"path": f"src/m{i % 300}.py", "old": "a", "new": "b"})
        elif r < 0.75:
            steps.append(s.approval("bash"))
            steps += s.tool("bash", {"command": "git push origin fix"}, idempotency_key=f"k{i}")
        elif r < 0.8:
            steps.append(s.checkpoint(f"ckpt-{i}", commit=f"{i:040x}"))
        elif r < 0.82 and tokens > 60_000:
            steps.append(s.compaction(before=tokens, after=12_000))
            tokens = 12_000
        else:
            steps += s.tool("grep", {"pattern": f"def f{i % 60}", "path": "src"})
    steps.append(s.end())
    return steps


def feed(detector: Detector, steps: list[Step]) -> list[Alert]:
    alerts: list[Alert] = []
    for step in steps:
        alerts.extend(detector.update(step))
    return alerts


@pytest.fixture(params=NAMES)
def detector(request: pytest.FixtureRequest) -> Detector:
    return REGISTRY[request.param]()


def test_registry_has_the_detectors() -> None:
    assert {"runaway_loop", "intent_drift", "compliance_decay", "egress_gaming"} <= set(NAMES)


def test_clone_starts_fresh(detector: Detector) -> None:
    fresh = detector.clone().state_dict()
    feed(detector, long_session(200))
    clone = detector.clone()
    assert pickle.dumps(clone.state_dict()) == pickle.dumps(fresh)
    assert clone.get_params() == detector.get_params()


def test_updates_leave_the_shared_parameters_alone() -> None:
    # Clones share their prototype's parameters (policies included): a detector that
    # changed one would leak state from one session into every other.
    root = Path(__file__).resolve().parents[1]
    configured = detector_set(load_config(root / "trajwatch.toml"))
    for prototype in configured.prototypes:
        before = copy.deepcopy(prototype.get_params())
        clone = prototype.clone()
        feed(clone, long_session(300, seed=11))
        assert clone.get_params() == before, prototype.name
        assert all(
            clone.get_params()[name] is value for name, value in prototype.get_params().items()
        )


def test_state_round_trips_and_gives_identical_later_alerts(detector: Detector) -> None:
    # Checkpointed at many points (a worker may stop anywhere: while a call awaits its
    # result, inside a loop, after a compaction), restored and fed the rest, a detector
    # raises exactly what the uninterrupted one raises.
    steps = long_session(300, seed=3)
    want = feed(detector.clone(), steps)
    live = detector.clone()
    raised: list[Alert] = []
    for cut, step in enumerate(steps):
        if cut % 7 == 3:
            restored = detector.clone()
            restored.load_state_dict(pickle.loads(pickle.dumps(live.state_dict())))
            assert raised + feed(restored, steps[cut:]) == want, cut
        raised += live.update(step)


def test_nothing_fires_during_warm_up(detector: Detector) -> None:
    s = Session("warm", goal="Add a --verbose flag to the CLI in src/cli.py")
    steps = [s.start(), s.model()]
    steps += s.tool("read_file", {"path": "src/cli.py"})
    steps.append(s.model())
    steps += s.tool("grep", {"pattern": "argparse", "path": "src"})
    assert feed(detector, steps) == []


def test_sparse_steps_and_unknown_detail_are_ignored(detector: Detector) -> None:
    s = Session("sparse")
    steps = [s.start(), s.model(tokens_in=0, tokens_out=0)]
    bare = [
        st.with_(
            tool=None,
            action=None,
            arguments=None,
            text=None,
            result=None,
            detail={"unexpected": {"nested": [1, 2]}, "x-vendor": "y"},
        )
        for st in s.tool("mystery", None)
    ]
    feed(detector, [*steps, *bare, s.end(claimed_done=None)])


def test_state_is_bounded(detector: Detector) -> None:
    steps = long_session(6_000, seed=5)
    feed(detector, steps[:2_000])
    early = len(pickle.dumps(detector.state_dict()))
    feed(detector, steps[2_000:])
    late = len(pickle.dumps(detector.state_dict()))
    assert late <= MAX_STATE_BYTES, f"{detector.name}: {late} bytes of state"
    assert late <= max(2 * early, 8_192), f"{detector.name} state grows: {early} → {late}"


def test_same_input_same_alerts(detector: Detector) -> None:
    steps = long_session(400, seed=9)
    assert feed(detector, steps) == feed(detector.clone(), steps)


def test_bad_parameters_fail_in_the_constructor(detector: Detector) -> None:
    params = detector.get_params()
    numeric = [
        k for k, v in params.items() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    assert numeric, f"{detector.name} has no numeric parameters to check"
    with pytest.raises(ValueError):
        type(detector)(**{**params, numeric[0]: -1})
