"""workspace_conflict's rules and alerts (detectors/workspace_conflict): pure, no store."""

from __future__ import annotations

import pytest

from detectors.workspace_conflict.detector import WorkspaceConflict
from detectors.workspace_conflict.rules import Span, conflicts
from features.session.writes import HEAD, REMOTE, TREE
from models.records import SessionInfo, Severity, WorkspaceWrite

S = 1_000_000_000
MIN = 60 * S
KEY = "git:github.com/acme/app#main"
HOST, DIR = "ws5", "/home/zoe/app"


def w(
    session: str, seq: int, minute: float, path: str, op: str = "edit", target: str | None = None
) -> WorkspaceWrite:
    return WorkspaceWrite(
        workspace_key=KEY,
        path=path,
        op=op,
        session_id=session,
        step_id=f"{session}#{seq}",
        seq=seq,
        ts=int(minute * MIN),
        source_ref=f"{session}#{seq}",
        target=target,
    )


def span(session: str, start: float, end: float | None = None, **kw: str) -> Span:
    place = {"host": HOST, "directory": DIR, **kw}
    return Span(
        session, started=int(start * MIN), ended=None if end is None else int(end * MIN), **place
    )


def rules(
    new: list[WorkspaceWrite], known: list[WorkspaceWrite], spans: dict[str, Span]
) -> list[str]:
    detector = WorkspaceConflict()
    return sorted(c.rule for c in detector.judge(new, known, spans))


def test_two_live_runs_writing_one_file_conflict() -> None:
    spans = {"A": span("A", 0), "B": span("B", 5)}
    assert rules([w("B", 4, 10, "src/r.py")], [w("A", 7, 8, "src/r.py")], spans) == ["same_file"]


def test_different_files_or_reads_only_do_not() -> None:
    spans = {"A": span("A", 0), "B": span("B", 5)}
    assert rules([w("B", 4, 10, "src/q.py")], [w("A", 7, 8, "src/r.py")], spans) == []
    assert rules([], [w("A", 7, 8, "src/r.py")], spans) == []


def test_sequential_runs_do_not_conflict() -> None:
    # A ended before B started: B edits what A left, as a follow-up run does
    spans = {"A": span("A", 0, 9), "B": span("B", 12)}
    assert rules([w("B", 4, 14, "src/r.py")], [w("A", 7, 8, "src/r.py")], spans) == []


def test_writes_further_apart_than_the_window_do_not_conflict() -> None:
    spans = {"A": span("A", 0), "B": span("B", 5)}
    far = 8 + 121  # the default window is two hours
    assert rules([w("B", 4, far, "src/r.py")], [w("A", 7, 8, "src/r.py")], spans) == []


def test_commits_conflict_in_one_checkout_only() -> None:
    a, b = w("A", 7, 8, HEAD, "commit"), w("B", 4, 10, HEAD, "commit")
    same = {"A": span("A", 0), "B": span("B", 5)}
    assert rules([b], [a], same) == ["same_branch"]
    clones = {"A": span("A", 0), "B": span("B", 5, host="ws6")}  # two clones of the branch
    assert rules([b], [a], clones) == []


def test_a_forced_push_over_a_push_made_while_the_forcer_ran_conflicts_even_after_it_ended() -> (
    None
):
    spans = {"A": span("A", 0, 9), "B": span("B", 5, host="pod-2")}
    pushed, forced = w("A", 7, 8, REMOTE, "push"), w("B", 9, 11, REMOTE, "force_push")
    assert rules([forced], [pushed], spans) == ["force_push"]
    # the forcer started after the push: its base held those commits (a sequential amend)
    later = {"A": span("A", 0, 9), "B": span("B", 10, host="pod-2")}
    assert rules([forced], [pushed], later) == []


def test_a_reset_under_a_live_run_of_the_checkout_throws_its_work_away() -> None:
    edit, reset = w("A", 7, 8, "src/r.py"), w("B", 3, 12, TREE, "reset", "5c16ec3")
    assert rules([reset], [edit], {"A": span("A", 0), "B": span("B", 10)}) == ["reset_over"]
    # another clone of the branch: a reset there touches nothing of A's
    other = {"A": span("A", 0), "B": span("B", 10, directory="/srv/app")}
    assert rules([reset], [edit], other) == []


def test_a_reset_to_another_revision_reverts_the_last_checkpoint_of_another_run() -> None:
    checkpoint = w("A", 20, 8, HEAD, "checkpoint", "92d8ab02be48")
    spans = {"A": span("A", 0, 9), "B": span("B", 10)}
    assert rules([w("B", 3, 12, TREE, "reset", "6db0f78")], [checkpoint], spans) == [
        "reverted_checkpoint"
    ]
    # to the checkpoint's own commit (a short hash of it): a sync, not a revert
    assert rules([w("B", 3, 12, TREE, "reset", "92d8ab0")], [checkpoint], spans) == []
    # long after the checkpoint: outside revert_window (6 h)
    assert rules([w("B", 3, 8 + 361, TREE, "reset", "6db0f78")], [checkpoint], spans) == []


def test_editing_what_a_checkpoint_committed_from_an_older_base_is_a_stale_base() -> None:
    known = [w("A", 7, 5, "src/r.py"), w("A", 20, 8, HEAD, "checkpoint", "92d8ab02be48")]
    stale = {"A": span("A", 0, 9), "B": span("B", 10, revision="6db0f78")}
    assert rules([w("B", 4, 14, "src/r.py")], known, stale) == ["stale_base"]
    # the next run starts from the checkpoint's commit: the hand-over works as meant
    fresh = {"A": span("A", 0, 9), "B": span("B", 10, revision="92d8ab02be48")}
    assert rules([w("B", 4, 14, "src/r.py")], known, fresh) == []


def test_two_new_writes_of_two_sessions_are_judged_once() -> None:
    spans = {"A": span("A", 0), "B": span("B", 5)}
    found = conflicts(
        [w("A", 7, 8, "src/r.py"), w("B", 4, 10, "src/r.py")],
        [],
        spans,
        window=120 * MIN,
        revert_window=360 * MIN,
    )
    assert [(c.rule, c.mine.session_id) for c in found] == [("same_file", "B")]


def test_one_alert_on_each_session_with_evidence_from_both() -> None:
    detector = WorkspaceConflict()
    spans = {"A": span("A", 0), "B": span("B", 5)}
    found = detector.judge([w("B", 4, 10, "src/r.py")], [w("A", 7, 8, "src/r.py")], spans)
    alerts = detector.alerts(found, spans, {("A", 10 * MIN): 9, ("B", 10 * MIN): 4})
    by = {a.session_id: a for a in alerts}
    assert set(by) == {"A", "B"}
    assert (by["A"].onset_step_id, by["A"].raised_seq, by["A"].ts) == ("A#7", 9, 10 * MIN)
    assert (by["B"].onset_step_id, by["B"].raised_seq) == ("B#4", 4)
    assert [r["session_id"] for r in by["A"].evidence] == ["A", "B"]
    assert "src/r.py" in by["A"].reason and "session B" in by["A"].reason
    assert all(str(a.action) == "notify" and a.severity == Severity.WARN for a in alerts)
    # the same input gives the same ids; a pair alerted already is not alerted again
    again = detector.alerts(found, spans, {})
    assert sorted(a.alert_id for a in again) == sorted(a.alert_id for a in alerts)
    assert detector.alerts(found, spans, {}, {"A": {("B", "warn")}, "B": {("A", "warn")}}) == []


def test_a_warning_after_the_pairs_critical_alert_is_not_raised() -> None:
    detector = WorkspaceConflict()
    spans = {"A": span("A", 0), "B": span("B", 5)}
    known = [w("A", 7, 8, "src/r.py")]
    new = [w("B", 3, 9, TREE, "reset"), w("B", 4, 10, "src/r.py")]
    alerts = detector.alerts(detector.judge(new, known, spans), spans, {})
    assert sorted((a.session_id, str(a.severity)) for a in alerts) == [
        ("A", "critical"),
        ("B", "critical"),
    ]


def test_host_less_directories_are_not_judged_unless_asked() -> None:
    container = SessionInfo(session_id="s", workspace="/workspace")
    assert WorkspaceConflict().key_of(container) is None
    assert WorkspaceConflict(judge_hostless=True).key_of(container) == "dir::/workspace"
    pod = SessionInfo(session_id="s", workspace="/workspace", host="pod-1")
    assert WorkspaceConflict().key_of(pod) == "dir:pod-1:/workspace"


def test_per_session_it_raises_nothing() -> None:
    from detectors.testing import Session

    detector = WorkspaceConflict()
    s = Session("a", workspace=DIR)
    steps = [
        s.start(),
        *s.tool("Edit", {"file_path": f"{DIR}/x", "old_string": "", "new_string": "y"}),
    ]
    assert [detector.update(step) for step in steps] == [[], [], []] and detector.score == 0.0


@pytest.mark.parametrize("bad", [{"window_seconds": 0}, {"max_writes": -1}, {"judge_hostless": 1}])
def test_bad_parameters_fail_in_the_constructor(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        WorkspaceConflict(**bad)  # type: ignore[arg-type]


def test_a_write_before_the_other_run_began_conflicts_while_its_writer_still_runs() -> None:
    # A edits at minute 8, B starts at 9 and edits the file at 10 while A runs on
    spans = {"A": span("A", 0), "B": span("B", 9)}
    assert rules([w("B", 4, 10, "src/r.py")], [w("A", 7, 8, "src/r.py")], spans) == ["same_file"]
