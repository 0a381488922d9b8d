"""runaway_loop's progress signals (issue 26): what was learnt, changed, waited for, delegated."""

from __future__ import annotations

import pickle
import random

from detectors.runaway_loop.detector import RunawayLoop
from detectors.runaway_loop.patience import patient
from detectors.runaway_loop.retries import names_only
from detectors.testing import Session
from features.calls.information import (
    changed_targets,
    failure_shape,
    information_digest,
    wait_seconds,
)
from models.records import Alert, Severity, Step


def feed(steps: list[Step], **params: object) -> list[Alert]:
    detector = RunawayLoop(**params)  # type: ignore[arg-type]
    return [alert for step in steps for alert in detector.update(step)]


def warmup(s: Session) -> list[Step]:
    steps = [s.start()]
    for path in ("README.md", "src/app.py", "tests/test_app.py"):
        steps += [s.model(), *s.tool("read_file", {"path": path}, result=f"contents of {path}")]
    return steps


# -- features ---------------------------------------------------------------------------


def test_the_digest_keeps_counts_and_masks_what_varies_without_meaning() -> None:
    poll = '{"health": "Progressing", "message": "%d of 20 updated replicas are available"}'
    assert information_digest(poll % 3) != information_digest(poll % 4)
    envelope = "Chunk ID: %s\nWall time: %s seconds\nOutput:\nqueued"
    assert information_digest(envelope % ("678fe8", "1.78")) == information_digest(
        envelope % ("bf83c3", "61.79")
    )
    assert failure_shape("1 failed; 23 filtered out") == failure_shape("1 failed; 52 filtered out")
    assert failure_shape("FAILED test_a") != failure_shape("FAILED test_b")


def test_waits_and_targets_are_read_from_commands_and_patches() -> None:
    assert wait_seconds("bash", '{"command": "sleep 90 && gh run view 1"}') == 90.0
    assert wait_seconds("Bash", '{"command": "sleep 250ms; ls"}') == 0.25
    assert wait_seconds("desktop__wait", '{"seconds": 30}') == 30.0
    assert wait_seconds("bash", '{"command": "echo sleepy 30"}') == 0.0
    patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n*** Add File: src/b.rs\n"
    assert changed_targets(patch, set()) == {"src/a.rs", "src/b.rs"}


def test_patience_is_a_growing_wait_for_a_bounded_count() -> None:
    assert patient([2.0, 4.0, 8.0], limit=6)
    assert not patient([30.0, 30.0], limit=6)  # flat
    assert not patient([2.0, 4.0, 8.0, 16.0, 32.0, 64.0], limit=6)  # never stops
    assert not patient([0.0, 4.0], limit=6)  # the first retry did not wait


def test_distinct_targets_are_not_one_question_reworded() -> None:
    assert names_only(("docs/a.md",), ("docs/b.md",))
    assert not names_only(("census 2011 Bulgaria",), ("Bulgaria census gender",))
    assert not names_only(("x",), ("x",))


# -- the detector -----------------------------------------------------------------------


def test_retries_with_a_growing_backoff_are_patience_and_flat_ones_a_loop() -> None:
    def retries(waits: list[int]) -> list[Step]:
        s = Session("backoff")
        steps = warmup(s)
        steps += [s.model(), *s.tool("bash", {"command": "cargo fetch"}, ok=False, error="E1")]
        for wait in waits:
            command = f"sleep {wait} && cargo fetch" if wait else "cargo fetch"
            steps += [s.model(), *s.tool("bash", {"command": command}, ok=False, error="E1")]
        return steps

    assert feed(retries([4, 8])) == []  # two back-off retries, failing alike: patience
    assert feed(retries([4, 8, 16])) == []
    flat = feed(retries([0, 0]))
    assert [a.severity for a in flat] == [Severity.WARN]
    assert feed(retries([4, 8, 16, 32, 64, 128, 256]))  # unbounded: a loop again


def test_a_poll_that_waits_each_time_gets_three_cycles_more() -> None:
    def polls(count: int) -> list[Step]:
        s = Session("poll")
        steps = warmup(s)
        for _ in range(count):
            command = "sleep 120 && curl -s http://alerts/api | jq length"
            steps += [s.model(), *s.tool("bash", {"command": command}, result="0")]
        return steps

    assert feed(polls(6)) == []  # waited on an alert six times: patience
    alerts = feed(polls(12))
    assert alerts and alerts[0].severity == Severity.WARN
    assert "waiting each time" in alerts[0].reason


def test_a_poll_whose_count_moves_past_the_first_line_is_progress() -> None:
    s = Session("rollout")
    steps = warmup(s)
    for i in range(12):
        result = '{"sync": "Synced", "revision": "c7a58b8", "health": {"status": "Progressing",'
        result += f' "message": "{i // 2} of 20 updated replicas are available"}}}}'
        steps += [s.model(), *s.tool("argocd_get_application", {"name": "app"}, result=result)]
    assert feed(steps) == []


def test_reading_distinct_files_that_open_alike_is_no_loop() -> None:
    s = Session("read")
    steps = warmup(s)
    header = "from __future__ import annotations\nimport logging\n" * 4
    for name in ("tax", "credits", "invoices", "ledger", "refunds"):
        result = header + f"\ndef {name}():\n    return compute_{name}()\n" * 5
        steps += [s.model(), *s.tool("Read", {"file_path": f"src/{name}.py"}, result=result)]
    assert feed(steps) == []


def subagents(depth: int, *, nested: bool) -> list[Step]:
    """A run delegating ``depth`` times: each sub-agent delegating again before its
    result (nested), or the parent waiting for each result before the next (serial)."""
    s = Session("agents")
    steps = warmup(s)
    pending: list[Step] = []
    for i in range(depth):
        task, done = s.tool("Task", {"prompt": f"research angle {i} of the audit"}, result="ok")
        steps += [s.model(), task]
        # the sub-agent reasons and works while the Task call is open
        steps += [
            s.model(),
            *s.tool("WebFetch", {"url": f"https://docs.example/{i}"}, result=f"p{i}"),
        ]
        if nested:
            pending.append(done)
        else:
            steps.append(done)
    return steps + pending[::-1]


def test_agents_spawning_agents_warn_at_depth_four_and_kill_at_eight() -> None:
    assert feed(subagents(12, nested=False)) == []  # one sub-agent at a time: bounded
    assert feed(subagents(3, nested=True)) == []
    alerts = feed(subagents(9, nested=True))
    assert [a.severity for a in alerts] == [Severity.WARN, Severity.CRITICAL]
    assert "sub-agents are running at once" in alerts[0].reason


def test_state_stays_bounded_over_ten_thousand_steps() -> None:
    """Every structure the progress rules add is bounded at any session length: a
    10,000- and a 20,000-step session of random work, polls, retries, patches, delegations
    that never return and compactions leave states of one size (x 1.1)."""

    def session(n: int, seed: int) -> list[Step]:
        rng = random.Random(seed)
        s = Session(f"long-{seed}")
        steps = [s.start()]
        while len(steps) < n:
            r = rng.random()
            steps.append(s.model())
            if r < 0.25:
                steps += s.tool("read_file", {"path": f"src/m{rng.randint(0, 5_000)}.py"})
            elif r < 0.4:
                ok = rng.random() < 0.5
                steps += s.tool("bash", {"command": "pytest -q"}, ok=ok, error="1 failed")
            elif r < 0.55:
                edit = {"path": f"src/m{rng.randint(0, 5_000)}.py", "new": str(rng.random())}
                steps += s.tool("edit_file", edit)
            elif r < 0.65:
                command = f"sleep {rng.randint(1, 60)} && gh run view 1"
                steps += s.tool("bash", {"command": command}, result="queued")
            elif r < 0.75:
                task, _ = s.tool("Task", {"prompt": f"angle {rng.randint(0, 10**6)}"})
                steps.append(task)  # never answered: an open call forever
            elif r < 0.77:
                steps.append(s.compaction(before=100_000, after=10_000))
            else:
                steps += s.tool("grep", {"pattern": f"f{rng.randint(0, 10**6)}"}, result="none")
        return steps

    sizes = []
    for n in (10_000, 20_000):
        detector = RunawayLoop()
        for step in session(n, 7):
            detector.update(step)
        assert len(detector._open) <= 64 and len(detector._series) <= 8
        assert len(detector._targets) <= 512
        sizes.append(len(pickle.dumps(detector.state_dict())))
    assert sizes[1] <= 1.1 * sizes[0], sizes  # saturated by 10,000: no growth after


def test_changes_alternating_between_two_states_are_a_loop() -> None:
    """A-B-A-B: a revision and its reversal resubmitted in turn, with a version counter
    and reads between them answering differently each time, reach no third state."""

    def submissions(messages: list[str]) -> list[Step]:
        s = Session("pingpong")
        steps = warmup(s)
        rng = random.Random(3)
        for version, message in enumerate(messages, 1):
            steps.append(s.model())
            steps += s.tool(
                "run_query",
                {"sql": "SELECT count(*) FROM customers"},
                result=f"{rng.randint(5_000, 7_000)} rows",
            )
            steps.append(s.model())
            steps += s.tool(
                "send_message",
                {"recipient": "reviewer", "message": f"dataset v{version}: {message}"},
                result=f"changes requested ({rng.randint(0, 10**6)})",
            )
        return steps

    states = ["including trial plans", "excluding trial plans"]
    alerts = feed(submissions(states * 4))
    assert alerts and alerts[0].severity == Severity.WARN
    assert "alternates between two states" in alerts[0].reason
    distinct = [
        f"with the {word} cohort"
        for word in ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
    ]
    assert feed(submissions(distinct)) == []  # each revision a state not reached before
    assert feed(submissions([states[0]] * 8)) == []  # A-A-A: the cycle rules' to judge


def test_a_check_whose_failures_keep_falling_is_getting_closer() -> None:
    # fix, re-run, fewer unmatched each time: not attempts at one sub-goal "none closer"
    from detectors.runaway_loop.detector import RunawayLoop
    from detectors.testing import Session

    def run(counts: list[int]) -> list[str]:
        s = Session("tally", goal="Fix scripts/reconcile.py until it reports 0 unmatched")
        steps = [s.start()]
        for i, n in enumerate(counts):
            steps += s.tool(
                "replace_in_file",
                {"path": "scripts/reconcile.py", "search": "# TODO", "replace": f"fix_{i}()"},
                result="Applied edit to scripts/reconcile.py",
            )
            steps += s.tool(
                "shell",
                {"cmd": "python scripts/reconcile.py --month 2025-10"},
                ok=False,
                error=f"UNMATCHED {n} payouts",
            )
        detector = RunawayLoop()
        return [a.reason for st in steps for a in detector.update(st)]

    assert run([14, 9, 5, 2, 1]) == []  # (without the tally: "none closer" at the third)
    assert run([7, 7, 7, 7, 7])  # the same count each time: still a loop


def test_changes_alternating_between_two_targets_undo_nothing() -> None:
    """A relay posting the feed's status to one channel and answers to another in turn
    (A-B-A-B by their words) changes two targets, neither undoing the other; the same
    two messages in turn to one reviewer still alternate between two states."""

    def relay(channels: tuple[str, str]) -> list[Step]:
        s = Session("relay")
        steps = warmup(s)
        for n in range(8):
            channel = channels[n % 2]
            content = f"Status: bridge step r{n}x" if n % 2 == 0 else f"Soon, see feed q{n}z"
            steps.append(s.model())
            steps += s.tool("read_feed", {"since": n}, result=f"event {n}")
            steps.append(s.model())
            steps += s.tool(
                "discord_send", {"channel": channel, "content": content}, result='{"ok": true}'
            )
        return steps

    assert feed(relay(("announcements", "help"))) == []
    alerts = feed(relay(("reviewer", "reviewer")))
    assert alerts and "alternates between two states" in alerts[0].reason


def test_an_answer_flipping_between_two_values_is_no_news() -> None:
    """Clear a failed task, ask its state, again and again: ``up_for_retry`` then
    ``failed`` each time is two answers seen before, not progress; a state that moves
    to one not seen before each time is."""

    def storm(states: list[str]) -> list[Step]:
        s = Session("storm")
        steps = warmup(s)
        for state in states:
            steps.append(s.model())
            steps += s.tool(
                "bash",
                {"command": "airflow tasks clear roster -t validate_batch -y"},
                result="Clearing task instance: roster.validate_batch [failed] 1 task instance",
            )
            steps.append(s.model())
            steps += s.tool(
                "bash", {"command": "airflow tasks state roster validate_batch"}, result=state
            )
        return steps

    alerts = feed(storm(["up_for_retry", "failed"] * 4))
    assert alerts and "cycle of 2 calls" in alerts[0].reason
    moving = ["queued", "scheduled", "running", "deferred", "restarting", "success"]
    assert feed(storm(moving)) == []


def test_a_back_off_shown_only_by_timestamps_is_patience() -> None:
    """Restart a failed connector and read its status, waiting longer before each new
    restart (the wait is not a recorded call, only the clock shows it): patience for a
    bounded count. The same cycle at a flat interval is a loop."""

    def restarts(gaps: list[float]) -> list[Step]:
        s = Session("backoff")
        steps = warmup(s)
        url = "http://connect.example:8083/connectors/hl7-source"
        for gap in gaps:
            s.ts += int(gap * 1e9)  # the agent waited before this attempt
            steps.append(s.model())
            steps += s.tool("bash", {"command": f"curl -X POST {url}/restart"}, result="RESTARTING")
            steps.append(s.model())
            steps += s.tool("bash", {"command": f"curl {url}/status"}, result="FAILED")
        return steps

    assert feed(restarts([20, 60, 150, 400])) == []
    alerts = feed(restarts([20, 20, 20, 20, 20]))
    assert alerts and "cycle of 2 calls" in alerts[0].reason
