"""runaway_loop: what makes a call new, and what makes a repeat patience (issue 26).

Small constructed sessions: a retry that only re-words its ``description`` repeats its
call; attempts that each run longer (a growing ``--timeout``, a client backing off) are
patience for a bounded count; a failure's printed output is part of how it failed
(``2 of 6 ready`` after ``1 of 6`` is progress), its wall time is not.
"""

from __future__ import annotations

from dataclasses import replace

from detectors.runaway_loop.detector import RunawayLoop
from detectors.runaway_loop.rules import result_signature
from detectors.testing import Session
from features.calls.annotations import operative_arguments
from features.calls.step_features import features_of
from models.records import Alert, Step


def feed(steps: list[Step]) -> list[Alert]:
    detector = RunawayLoop()
    return [alert for step in steps for alert in detector.update(step)]


def warmup(s: Session) -> list[Step]:
    steps = [s.start()]
    for path in ("README.md", "scripts/push.py"):
        steps += [s.model(), *s.tool("Read", {"file_path": path}, result=f"contents of {path}")]
    return steps


def bash(command: str, description: str) -> dict[str, str]:
    return {"command": command, "description": description}


def test_a_call_that_only_rewords_its_description_is_the_same_action() -> None:
    s = Session("desc")
    a, _ = s.tool("Bash", bash("make deploy", "Deploy it."))
    b, _ = s.tool("Bash", bash("make deploy", "Retry the deploy after the 503, backing off 8s."))
    c, _ = s.tool("Bash", bash("make deploy-prod", "Deploy it."))
    assert features_of(a).action[0] == features_of(b).action[0]
    assert features_of(a).numbers == features_of(b).numbers  # "8s" is no new number
    assert features_of(a).action[0] != features_of(c).action[0]
    # a tool whose whole input is its description keeps it
    assert operative_arguments('{"description": "summarise the logs"}') is None


def test_retries_rewording_their_description_are_a_loop() -> None:
    s = Session("storm")
    steps = warmup(s)
    for i in range(6):
        steps.append(s.model())
        steps += s.tool(
            "Bash",
            bash("python scripts/push.py --batch 3", f"Attempt {i + 2}: the API failed, retry."),
            ok=False,
            error="exit status 1",
            result="HTTP 500 Internal Server Error",
        )
    alerts = feed(steps)
    assert alerts, "the same failing call, re-described each time, is a loop"
    assert alerts[-1].severity.value == "critical"


def test_attempts_that_each_run_longer_are_patience_for_a_bounded_count() -> None:
    def poll(n: int) -> list[Step]:
        s = Session(f"poll{n}")
        steps = warmup(s)
        for i in range(n):
            timeout = 5 * 2**i
            steps.append(s.model())
            steps += s.tool(
                "shell",
                {"command": f"kubectl rollout status deploy/api --timeout={timeout}s"},
                ok=False,
                error="exit status 1",
                result="Waiting for rollout to finish: 0 of 4 updated replicas are available",
                seconds=timeout + 0.4,
            )
        return steps

    assert feed(poll(4)) == []  # 5, 10, 20, 40 s: back-off
    assert feed(poll(9)), "past the patience the same unchanged poll is a loop"


def test_the_same_flat_retry_is_not_patience() -> None:
    s = Session("flat")
    steps = warmup(s)
    for _ in range(4):
        steps.append(s.model())
        steps += s.tool(
            "shell",
            {"command": "kubectl rollout status deploy/api --timeout=60s"},
            ok=False,
            error="exit status 1",
            result="Waiting for rollout to finish: 0 of 4 updated replicas are available",
            seconds=60.4,
        )
    assert feed(steps)


def test_a_failure_whose_output_moves_is_progress() -> None:
    s = Session("moving")
    steps = warmup(s)
    for ready in range(4):
        steps.append(s.model())
        steps += s.tool(
            "shell",
            {"command": "kubectl rollout status deploy/api --timeout=60s"},
            ok=False,
            error="exit status 1",
            result=f"Waiting for rollout to finish: {ready} of 6 updated replicas are available",
            seconds=60.4,
        )
    assert feed(steps) == []


def test_retries_that_worked_then_moved_to_the_next_batch_repeat_nothing() -> None:
    s = Session("batches")
    steps = warmup(s)
    for batch in range(4):
        for attempt in range(2):
            steps.append(s.model())
            steps += s.tool(
                "Bash",
                bash(f"python scripts/push.py --batch {batch}", "Push the batch."),
                ok=attempt == 1,
                error=None if attempt else "exit status 1",
                result=f"batch {batch}: 40 records created" if attempt else "HTTP 503",
                seconds=1.0 + 4 * attempt,  # the retry backs off inside the call
            )
    assert feed(steps) == []


def test_a_failures_wall_time_is_a_measurement_not_news() -> None:
    a = "exit status 1\nWall time: 0.742 seconds\nOutput: 2 of 6 ready"
    b = "exit status 1\nWall time: 0.599 seconds\nOutput: 2 of 6 ready"
    c = "exit status 1\nWall time: 0.599 seconds\nOutput: 3 of 6 ready"
    assert result_signature(a, measured=True) == result_signature(b, measured=True)
    assert result_signature(b, measured=True) != result_signature(c, measured=True)


def test_a_poll_that_backs_off_again_after_each_bit_of_progress_is_no_loop() -> None:
    s = Session("rollout")
    steps = warmup(s)
    for ready in range(5):
        for timeout in (5, 10, 20):  # progress resets the back-off
            steps.append(s.model())
            steps += s.tool(
                "shell",
                {"command": f"kubectl rollout status deploy/api --timeout={timeout}s"},
                ok=False,
                error="exit status 1",
                result=f"Waiting for rollout to finish: {ready} of 20 updated replicas",
                seconds=timeout + 0.4,
            )
    assert feed(steps) == []


def test_news_then_the_same_answer_at_a_flat_interval_is_still_a_loop() -> None:
    s = Session("stuck")
    steps = warmup(s)
    for ready in (0, 1, 1, 1, 1, 1, 1):
        steps.append(s.model())
        steps += s.tool(
            "shell",
            {"command": "kubectl rollout status deploy/api --timeout=30s"},
            ok=False,
            error="exit status 1",
            result=f"Waiting for rollout to finish: {ready} of 20 updated replicas",
            seconds=30.4,
        )
    assert feed(steps)


def watch(n: int, seconds: float) -> list[Step]:
    """``n`` runs of one log count, each answering 0 and blocking ``seconds``."""
    s = Session(f"watch{n}-{seconds}")
    steps = warmup(s)
    for _ in range(n):
        steps.append(s.model())
        steps += s.tool(
            "terminal__run",
            {"command": 'kubectl logs deploy/api --since=15m | grep -c "rounding"'},
            result='{"exit_code": 0, "stdout": "0"}',
            seconds=seconds,
        )
    return steps


def test_a_call_that_blocks_for_minutes_waits_as_a_sleep_does() -> None:
    assert feed(watch(5, 1.0)), "the same quick read answered the same five times"
    assert feed(watch(5, 540.0)) == [], "a 9-minute watch repeated 5 times is waiting"
    assert feed(watch(12, 540.0)), "patience is bounded: a dozen unchanged watches loop"


def rereads(*, compact: bool) -> list[Step]:
    """The same four files read in turn four times, a compaction after each round when
    ``compact``."""
    s = Session(f"rereads-{compact}")
    steps = [s.start()]
    for _ in range(4):
        for path in ("src/app.py", "src/db.py", "src/cli.py", "tests/test_app.py"):
            steps += [s.model(), *s.tool("Read", {"file_path": path}, result=f"text of {path}")]
        if compact:
            steps.append(s.compaction())
    return steps


def test_rereading_after_each_compaction_is_recovery_not_a_loop() -> None:
    assert feed(rereads(compact=False)), "the same four reads cycling, nothing learnt"
    assert feed(rereads(compact=True)) == [], "the context was lost each time"


def test_back_off_between_runs_of_one_call_is_patience_whatever_each_run_answered() -> None:
    s = Session("openalex")
    steps = warmup(s)
    fetch = {"command": "curl -sS 'https://api.example.org/works?search=domain-shift'"}
    errors = ["HTTP 429: Too Many Requests", "HTTP 503: Service Unavailable"]
    for i, error in enumerate([errors[0], errors[1], errors[0], errors[0]]):
        steps.append(s.model())
        steps += s.tool("shell", fetch, ok=False, error=error, result=error)
        steps += s.tool("shell", {"command": f"sleep {2**i}"}, result="")
    steps += s.tool("shell", fetch, result='{"results": [{"title": "a study"}]}')
    assert feed(steps) == []


def test_the_same_test_failing_beside_a_different_one_each_run_is_the_same_failure() -> None:
    """The same edit made and reverted, the same test failing each run while another
    fails beside it (flaky, or the edit's side effect): the output differs in words, not
    in a counter that moved - the same error again, a loop to stop (the recorded
    loop_cycle_edit_test_revert run)."""
    s = Session("flaky")
    steps = warmup(s)
    chunks = ["83a069", "cc719b", "e0f1aa", "91bc2d", "ffa310", "0c4e7d"]
    for i, other in enumerate(
        ("test_cache", "test_frame", "test_entry", "test_option", "test_token", "test_io")
    ):
        steps += [s.model(), *s.tool("edit_file", {"path": "src/cut.rs", "new_text": "floor(max)"})]
        steps.append(s.model())
        steps += s.tool(
            "bash",
            {"command": "cargo test --all"},
            ok=False,
            error="exit status 1: 2 test(s) failed",
            result=f"running {300 + 97 * i} tests\ntest r2740_preview ... FAILED\n"
            f"test {other} ... FAILED\nChunk ID: {chunks[i]}",
        )
        steps += [s.model(), *s.tool("bash", {"command": "git checkout -- src/cut.rs"})]
    alerts = feed(steps)
    assert alerts and alerts[-1].severity.value == "critical", [a.reason for a in alerts]


# -- hand-offs, and calls that ask another target (blind set 6: ops incidents) --


def handoffs(answers: list[str]) -> list[Step]:
    """A supervisor hands one task to a sub-agent again and again (``transfer_to_*``,
    result pending while the sub-agent works), each time handed back ``answers[i]``."""
    s = Session("handoff")
    steps = warmup(s)
    for i, answer in enumerate(answers):
        steps.append(s.model())
        transfer = s.call("transfer_to_sql_agent", {})
        steps += [transfer, s.model()]  # the sub-agent reasons under the open hand-off
        for quarter in ("2025Q3", "2025Q2"):
            query = f"SELECT vendor, SUM(amount) FROM ap WHERE quarter = '{quarter}' AND run = {i}"
            steps += s.tool("execute_sql", {"query": query}, result=f"V{i}39 | 6441.45 ({quarter})")
            steps.append(s.model())
        steps.append(s.result(transfer, result=answer))
    return steps


def test_a_task_handed_back_and_forth_with_the_same_result_is_a_loop() -> None:
    alerts = feed(handoffs(["Here are both periods: V239 6441.45, V146 76974.75"] * 5))
    handed = [a for a in alerts if "handed the task to a sub-agent" in a.reason]
    assert handed, [a.reason for a in alerts]
    assert handed[0].severity.value == "warn" and "3 times" in handed[0].reason


def test_a_sub_agent_handing_back_something_new_each_round_is_progress() -> None:
    rounds = [f"{n} of 5 reports reconciled" for n in range(1, 6)]
    assert not [a for a in feed(handoffs(rounds)) if "sub-agent" in a.reason]


def answered(commands: list[str], answers: list[str]) -> list[Step]:
    s = Session("targets")
    steps = warmup(s)
    for command, answer in zip(commands, answers, strict=True):
        steps.append(s.model())
        steps += s.tool("terminal", {"cmd": command}, result=answer)
    return steps


def test_one_check_of_many_targets_answered_alike_is_no_loop() -> None:
    """`terraform plan` in one folder after another, each answered `No changes.`: the
    template's slot refilled with another name asks another target."""
    dirs = ["sqs-orders/sns-alerts", "sqs-orders/guardduty", "waf/secrets-v2", "dns/kms-v2"]
    commands = [f"terraform -chdir=envs/staging/{d} plan -input=false" for d in dirs]
    answer = "No changes. Your infrastructure matches the configuration."
    assert feed(answered(commands, [answer] * len(commands))) == []


def test_paging_through_lines_is_judged_by_what_each_page_learnt() -> None:
    """A log's slow queries read page by page (`sed -n 1,5p`, `6,10p`, …): each page
    with lines of its own is progress; every page answering the same line learnt
    nothing from the one before (a loop)."""
    pages = [
        f"kubectl logs deploy/api | grep slow_query | sed -n {i},{i + 4}p" for i in (1, 6, 11, 16)
    ]
    lines = [
        f'slow_query duration_ms={ms} stmt="SELECT * FROM price_rules"'
        for ms in (2112, 1607, 1824, 1816)
    ]
    assert feed(answered(pages, lines)) == []
    alerts = feed(answered(pages, lines[:1] * 4))
    assert alerts and "same answer" in alerts[0].reason


def test_queries_sweeping_columns_are_not_one_request_reworded() -> None:
    """SQL that refills its column and table names asks other questions; the same
    request with its words moved and added asks one again."""
    s = Session("sweep")
    steps = warmup(s)
    for col, table, dim in (
        ("orders", "fct_orders", "hN4IS"),
        ("checkouts", "fct_sessions", "IrM0E"),
        ("sessions", "fct_sessions", "2S9fU"),
        ("checkouts", "fct_orders", "pD6Lm"),
        ("orders", "fct_sessions", "MR5LH"),
        ("cost_usd", "fct_sessions", "CyFTy"),
    ):
        query = (
            f"SELECT day, {col} FROM analytics.{table} WHERE day >= '2025-09-01' AND dim = '{dim}'"
        )
        steps.append(s.model())
        steps += s.tool("execute_sql", {"query": query}, result=f"{dim}: 4 rows")
    assert feed(steps) == []
    s = Session("reworded")
    steps = warmup(s)
    for query in (
        "orders per day since September for the checkout funnel",
        "checkout funnel orders per day since September by channel",
        "daily orders checkout funnel September onwards",
        "September onwards orders per day for checkout funnel totals",
    ):
        steps.append(s.model())
        steps += s.tool("ask_analyst", {"question": query}, result="see the funnel dashboard")
    alerts = feed(steps)  # asked again, told nothing new
    assert alerts and "re-word one request" in alerts[-1].reason


def _lookup(s: Session, zips: list[str], turns: list[str | None]) -> list[Step]:
    """A customer lookup by name and zip that fails, retried after each user turn."""
    steps = [s.start()]
    for zip_code, turn in zip(zips, turns, strict=True):
        model = s.model()
        if turn is not None:
            model = replace(model, detail={"user_message": turn})
        steps.append(model)
        steps += s.tool(
            "find_user_id_by_name_zip",
            {"first_name": "Emma", "last_name": "Wang", "zip": zip_code},
            ok=False,
            error="Error: user not found",
        )
    return steps


def test_a_retry_with_the_value_the_user_just_gave_is_no_blind_retry() -> None:
    """The lookup failed, the agent asked, the user corrected the zip code and the agent
    tried again with it: news it did not find itself, not a loop. The same retries with
    zip codes the user never gave are."""
    corrected = _lookup(
        Session("told"),
        ["39875", "39878", "39887"],
        ["Exchange my boots, I am Emma Wang, zip 39875", "Sorry, the zip is 39878", "Oh, 39887"],
    )
    assert feed(corrected) == []
    guessed = _lookup(
        Session("guessed"),
        ["39875", "39878", "39887"],
        ["Exchange my boots, I am Emma Wang, zip 39875", "Hello?", "Are you there?"],
    )
    assert feed(guessed)


def _taps(s: Session, screens: list[str]) -> list[Step]:
    """A phone agent tapping one spot three times, then dumping the screen, per screen."""
    steps = [s.start()]
    for screen in screens:
        for _ in range(3):
            steps.append(s.model())
            steps += s.tool("shell", {"command": "adb shell input tap 540 2170"}, result="")
        steps.append(s.model())
        steps += s.tool("shell", {"command": "adb shell uiautomator dump"}, result=screen)
    return steps


def test_taps_that_leave_the_screen_as_it_was_are_a_loop_sooner() -> None:
    """Taps print nothing; the dump after them shows whether they did anything. Three
    cycles answered by the same screen warn; the same cycles each showing a new screen
    (the list moved on) do not."""
    same = '<hierarchy><node text="Add to cart" bounds="[0,2100][1080,2240]"/></hierarchy>'
    alerts = feed(_taps(Session("stuck"), [same] * 3))
    assert alerts and "cycle of 4 calls" in alerts[0].reason
    moving = [f'<hierarchy><node text="Item {i}"/></hierarchy>' for i in range(3)]
    assert feed(_taps(Session("moving"), moving)) == []
