"""workspace_conflict through the pipeline and the store, on SQLite and PostgreSQL:
two sessions of one workspace, each alerted with evidence from the other; look-alikes
quiet; a replay adds nothing; two workers committing at once still find the pair."""

from __future__ import annotations

import threading
from typing import Any

from ingest.pipeline.sinks import Committed, Sink
from models.store import Store, StoreUnit
from tests.support.workspace_fleet import close, feed, pipeline, session


def conflict_alerts(store: Store) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for alert in store.alerts():
        if alert.detector == "workspace_conflict":
            out.setdefault(alert.session_id, []).append(alert)
    return out


def test_two_runs_editing_one_file_are_both_alerted_with_each_others_evidence(store: Store) -> None:
    events = session("a", 0, [(10, "src/refunds.py"), (50, "src/x.py")]) + session(
        "b", 20, [(30, "src/refunds.py")]
    )
    p = pipeline(store)
    feed(p, events)
    close(p)
    found = conflict_alerts(store)
    assert set(found) == {"a", "b"}
    (on_a,), (on_b,) = found["a"], found["b"]
    assert on_a.onset_step_id.endswith("a-c0") and on_b.onset_step_id.endswith("b-c0")
    assert {r.get("session_id") for r in on_a.evidence} == {"a", "b"}
    assert "src/refunds.py" in on_b.reason and "session a" in on_b.reason
    ids = sorted(a.alert_id for a in store.alerts())
    # replayed (a new process, the same input): nothing new is stored, or raised
    again = pipeline(store)
    feed(again, events)
    assert again.close() == []
    assert sorted(a.alert_id for a in store.alerts()) == ids


def test_look_alikes_stay_quiet(store: Store) -> None:
    events = (
        # sequential: b starts after a ended, from a's work
        session("a", 0, [(10, "src/refunds.py")], end=15)
        + session("b", 20, [(30, "src/refunds.py")], end=40)
        # same repository and file, another branch (a worktree): another workspace
        + session("c", 0, [(12, "src/refunds.py")], branch="feature/other")
        # live at once, different files
        + session("d", 100, [(110, "src/a.py")])
        + session("e", 100, [(112, "src/b.py")])
    )
    p = pipeline(store)
    feed(p, events)
    close(p)
    assert len(store.sessions()) == 5
    assert conflict_alerts(store) == {}


class Holding(Sink):
    """Keeps its commit's transaction open until told: another worker's commit of the
    same workspace must wait for it, then see its writes."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()

    def in_transaction(self, unit: StoreUnit, committed: Committed) -> None:
        if committed.steps and not self.inside.is_set():
            self.inside.set()
            assert self.release.wait(30)


def test_two_workers_committing_one_workspace_at_once_find_the_pair(db_url: str) -> None:
    # two processes' pipelines on one store (the Kafka workers' shape): worker 1 holds its
    # commit open after recording a's writes; worker 2 commits b's meanwhile
    with Store.open(db_url) as first, Store.open(db_url, migrate=False) as second:
        holding = Holding()
        one, two = pipeline(first, (holding,)), pipeline(second)
        feed(one, session("a", 0, [(10, "src/refunds.py")]), "p0")
        feed(two, session("b", 5, [(30, "src/refunds.py")]), "p1")
        worker = threading.Thread(target=close, args=(one,))
        worker.start()
        assert holding.inside.wait(30)
        done = threading.Event()

        def commit_two() -> None:
            close(two)
            done.set()

        other = threading.Thread(target=commit_two)
        other.start()
        # worker 2 waits on the workspace's lock (PostgreSQL) or the write lock (SQLite)
        try:
            assert not done.wait(1.0)
        finally:
            holding.release.set()
        worker.join(30)
        other.join(30)
        assert done.is_set()
        found = conflict_alerts(first)
        assert set(found) == {"a", "b"}
        assert all(len(alerts) == 1 for alerts in found.values())
