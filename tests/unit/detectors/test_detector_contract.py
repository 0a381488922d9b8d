"""One contract test over every registered detector (river's `checks`, scikit-learn's
`parametrize_with_checks`): fresh clones, state round-trips, quiet warm-up, tolerance of
sparse steps, bounded state, determinism, and the per-step ``score`` with its
``thresholds`` (every alert raised on a step whose score reaches its severity's line),
on synthetic streams and on real recorded runs."""

from __future__ import annotations

import copy
import math
import pickle
import random
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from detectors.base import Detector
from detectors.registry import REGISTRY, DetectorSet, load_builtin
from detectors.testing import Session
from features.text.clip import analysed_step
from models.records import Alert, Step
from models.store import Store
from tests.support.paths import ROOT
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


def looping_session(n_iterations: int, seed: int = 0) -> list[Step]:
    """:func:`long_session` with a real loop before its end: the same test run six times,
    failing alike, the same file re-patched between (runaway_loop's streams: the reads of
    distinct files that used to raise its alerts there are exploration, issue 26)."""
    *steps, end = long_session(n_iterations, seed)
    s = Session(end.session_id)
    s.seq, s.ts, s.calls = end.seq, end.ts, 100_000  # continue the session, new call ids
    for word in ("a", "b", "c", "d", "e", "f"):
        steps += [s.model(), *s.tool("bash", {"command": "cargo test t"}, ok=False, error="E1")]
        edit = {"path": "src/dates.py", "old": "x", "new": word}
        steps += [s.model(), *s.tool("edit_file", edit)]
    return [*steps, s.end()]


def feed(detector: Detector, steps: list[Step]) -> list[Alert]:
    alerts: list[Alert] = []
    for step in steps:
        alerts.extend(detector.update(step))
    return alerts


def scored(detector: Detector, steps: Iterable[Step]) -> list[tuple[Alert, float, float]]:
    """Feed ``steps``; after every update the score must be a finite float >= 0 and the
    thresholds a mapping of severities to finite lines > 0. Returns, for each alert raised,
    (alert, the score on its step, its severity's line then)."""
    raised = []
    for step in steps:
        alerts = detector.update(step)
        score, lines = detector.score, detector.thresholds
        assert type(score) is float and math.isfinite(score) and score >= 0, (step.seq, score)
        assert isinstance(lines, Mapping) and lines, f"{detector.name} names no thresholds"
        assert set(lines) <= {"warn", "critical"}, lines
        assert all(math.isfinite(v) and v > 0 for v in lines.values()), lines
        if detector.thresholds_fixed:  # the pipeline reads them once a checkpoint
            assert lines == detector.clone().thresholds, (detector.name, step.seq, lines)
        for alert in alerts:
            assert str(alert.severity) in lines, (detector.name, alert.severity, lines)
            raised.append((alert, score, lines[str(alert.severity)]))
    return raised


def assert_raised_at_their_lines(raised: list[tuple[Alert, float, float]]) -> None:
    for alert, score, line in raised:
        where = f"{alert.detector} {alert.severity} at step {alert.raised_seq}"
        assert score >= line, f"{where}: score {score} below its line {line}"
        # alerts round their score to 4 places
        assert score >= alert.score - 1e-4, f"{where}: score {score} < the alert's {alert.score}"


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
    root = ROOT
    configured = detector_set(load_config(root / "trajwatch.toml"))
    for prototype in configured.prototypes:
        before = copy.deepcopy(prototype.get_params())
        clone = prototype.clone()
        feed(clone, long_session(300, seed=11))
        assert clone.get_params() == before, prototype.name
        assert all(
            clone.get_params()[name] is value for name, value in prototype.get_params().items()
        )


@pytest.mark.parametrize("owned", [False, True])
def test_state_round_trips_and_gives_identical_later_alerts(
    detector: Detector, owned: bool
) -> None:
    # Checkpointed at many points (a worker may stop anywhere: while a call awaits its
    # result, inside a loop, after a compaction), restored and fed the rest, a detector
    # raises exactly what the uninterrupted one raises. ``owned``: as the pipeline
    # reopens a stored session, the pickled snapshot handed over uncopied.
    steps = long_session(300, seed=3)
    want = feed(detector.clone(), steps)
    live = detector.clone()
    raised: list[Alert] = []
    for cut, step in enumerate(steps):
        if cut % 7 == 3:
            restored = detector.clone()
            state = live.snapshot() if owned else live.state_dict()
            restored.load_state_dict(pickle.loads(pickle.dumps(state)), owned=owned)
            assert restored.score == live.score, cut  # the score is part of the state
            assert restored.thresholds == live.thresholds, cut
            from_snapshot = detector.clone()
            from_snapshot.load_state_dict(pickle.loads(pickle.dumps(live.snapshot())))
            assert from_snapshot.score == live.score, cut
            assert raised + feed(restored, steps[cut:]) == want, cut
        raised += live.update(step)


def warm_up() -> list[Step]:
    s = Session("warm", goal="Add a --verbose flag to the CLI in src/cli.py")
    steps = [s.start(), s.model()]
    steps += s.tool("read_file", {"path": "src/cli.py"})
    steps.append(s.model())
    steps += s.tool("grep", {"pattern": "argparse", "path": "src"})
    return steps


def test_nothing_fires_during_warm_up(detector: Detector) -> None:
    assert feed(detector, warm_up()) == []


def test_the_score_is_zero_before_any_evidence(detector: Detector) -> None:
    assert detector.score == 0.0 and detector.clone().score == 0.0
    for step in warm_up():
        detector.update(step)
        assert detector.score == 0.0, (detector.name, step.seq, detector.score)
    feed(detector, long_session(200, seed=2))
    assert detector.clone().score == 0.0  # a clone starts with no evidence


def test_every_alert_is_raised_where_the_score_reaches_its_line(detector: Detector) -> None:
    stream = looping_session if detector.name == "runaway_loop" else long_session
    raised = [r for seed in (3, 9, 11) for r in scored(detector.clone(), stream(400, seed))]
    assert_raised_at_their_lines(raised)
    # the budget_overrun/duplicate_side_effect/intent_drift/premature_completion/runaway_loop
    # alerts of these streams; the policy and egress detectors' are the real runs'
    if detector.name in SYNTHETIC_ALERTS:
        assert {str(a.severity) for a, _, _ in raised} >= SYNTHETIC_ALERTS[detector.name]


SYNTHETIC_ALERTS = {
    "budget_overrun": {"warn", "critical"},
    "duplicate_side_effect": {"warn", "critical"},
    "intent_drift": {"warn", "critical"},
    "premature_completion": {"warn"},
    "runaway_loop": {"warn"},
}
"""What :func:`long_session`'s seeds 3, 9 and 11 raise, so the check above is not empty."""


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


# -- real runs -------------------------------------------------------------------------

RECORDED = ROOT / "fixtures" / "recorded"
REAL_RUNS = {
    "run-007-55e226": {"runaway_loop"},
    "run-008-7aaac6": {"egress_gaming", "policy_violation"},
    "run-016-77a6fe": {"intent_drift", "premature_completion"},
    "run-028-7216c2": {"compliance_decay", "premature_completion"},
    "run-029-981e59": set(),
}
"""Recorded fixture runs (their session-event logs) and the detectors that alert on them."""
CORPUS = next(
    (
        p
        for p in (ROOT.parent / "shared" / "corpus", ROOT.parents[1] / "shared" / "corpus")
        if p.exists()
    ),
    ROOT.parent / "shared" / "corpus",
)  # beside the repository, or beside the folder of its worktrees
CORPUS_RUNS = {
    "TRAIL": (CORPUS / "trail" / "traces" / "gaia", 12),  # 12 traces
    "AgentDojo": (CORPUS / "agentdojo" / "runs", 1),  # one model's ~100 runs
}
"""Real agents' runs beside the repository (not in it): the first N files of each."""


def replayed(paths: list[Path], tmp: Path) -> tuple[DetectorSet, dict[str, list[Step]], list]:
    """The runs replayed through the pipeline with the repository's config: the detector
    set, each session's stored steps, the stored alerts."""
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    url = f"sqlite:///{tmp / 'runs.db'}"
    summary = replay(paths, settings=Settings(db_url=url), detectors=detectors)
    assert summary.dead_letters == 0
    with Store.open(url, migrate=False) as store:
        sessions = {i.session_id: store.steps(i.session_id) for i in store.sessions()}
        return detectors, sessions, store.alerts()


def check_runs(detectors: DetectorSet, sessions: dict[str, list[Step]], stored: list) -> set[str]:
    """Replay each session's stored steps as the pipeline feeds them, through fresh
    clones of the configured detectors, checking every score; the detectors that alerted."""
    raised: list[tuple[Alert, float, float]] = []
    for steps in sessions.values():
        views = [analysed_step(step) for step in steps]
        for detector in detectors.for_session():
            raised += scored(detector, views)
    # the same alerts as the pipeline stored: these scores are the run's. A cross-session
    # detector's alerts (agent_baseline, workspace_conflict) come from the pipeline's
    # stage that hands it other sessions, which a session replayed alone has not got
    own = [a for a in stored if not getattr(REGISTRY[a.detector], "cross_session", False)]
    assert sorted(a.alert_id for a, _, _ in raised) == sorted(a.alert_id for a in own)
    assert_raised_at_their_lines(raised)
    return {a.detector for a, _, _ in raised}


def test_real_runs_raise_every_alert_where_the_score_reaches_its_line(tmp_path: Path) -> None:
    paths = [next(RECORDED.glob(f"{run}.events.jsonl*")) for run in REAL_RUNS]
    fired = check_runs(*replayed(paths, tmp_path))
    assert fired == set().union(*REAL_RUNS.values())


@pytest.mark.parametrize("corpus", sorted(CORPUS_RUNS))
def test_real_agents_runs_raise_every_alert_where_the_score_reaches_its_line(
    corpus: str, tmp_path: Path
) -> None:
    folder, count = CORPUS_RUNS[corpus]
    if not folder.exists():
        pytest.skip("needs ../shared/corpus beside the repo")
    paths = sorted(p for p in folder.iterdir() if p.is_file())[:count]
    detectors, sessions, stored = replayed(paths, tmp_path)
    assert len(sessions) >= count
    check_runs(detectors, sessions, stored)


def hostile_session(scale: int, seed: int = 0) -> list[Step]:
    """What the fuzzer sends, as the pipeline hands it to a detector (each field cut to
    ``features.text.clip.MAX_ANALYSED_CHARS``): long words (a hex dump, one letter repeated,
    random letters) ``scale`` times 250 or 1,000 characters long, in the goal, the user's
    later messages, arguments, results and model text, each different."""
    rng = random.Random(seed)

    def word(n: int) -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))

    def text() -> str:
        n = scale * rng.choice((250, 1_000))
        return " ".join((word(n), rng.randbytes(n // 2).hex(), "x" * n, word(12)))

    s = Session(f"hostile-{seed}", goal=f"Flash {text()} and check it boots")
    steps = [s.start()]
    for i in range(40):
        steps.append(s.model(text=text()))
        steps += s.tool(
            rng.choice(("bash", "read_file", "http_get")),
            {"command": f"curl https://{word(40)}.example/{text()}", "path": f"/{text()}"},
            ok=rng.random() < 0.7,
            result=text(),
        )
        if i % 10 == 0:  # goal-like user messages arrive again later (Claude Code)
            steps.append(s.start().with_(step_id=f"{s.session_id}/again-{i}", text=text()))
    steps.append(s.end())
    return [analysed_step(step) for step in steps]


def test_state_grows_at_most_linearly_with_field_length(detector: Detector) -> None:
    # The fuzzer's costliest class: a goal holding one 16 KB word gave intent_drift
    # ~134 MB of goal stems (every prefix of every goal word: quadratic in the word's
    # length), pickled and compressed at each commit of the session: seconds a step, for
    # every later step. Fields four times longer may cost a state at most ~4x bigger.
    sizes = []
    for scale in (1, 4):
        live = detector.clone()
        feed(live, hostile_session(scale))
        sizes.append(len(pickle.dumps(live.state_dict())))
    small, big = sizes
    assert big <= 4.5 * max(small, 2_048), f"{detector.name}: {small} -> {big} bytes of state"


@pytest.mark.parametrize("banded", [False, True])
def test_a_calibrated_detector_reports_its_calibrated_score_at_its_lines(banded: bool) -> None:
    """A calibrated detector (the tuning notebook's config) keeps the contract in the
    calibrated scale: the explorer draws its score, not a flat zero."""
    from detectors.calibration import Bands, Calibration, calibrated

    fitted = Calibration(scores=(0.0, 0.1, 1.0), probabilities=(0.0, 0.6, 0.95))
    bands = Bands(warn=0.5, critical=0.9) if banded else None
    detector = calibrated(REGISTRY["runaway_loop"](), fitted, bands)
    raised = [
        r for seed in (3, 9, 11) for r in scored(detector.clone(), looping_session(400, seed))
    ]
    assert raised, "the streams raise runaway_loop alerts"
    assert_raised_at_their_lines(raised)
    assert all(score <= 0.95 for _, score, _ in raised)  # the calibrated scale, not the raw
