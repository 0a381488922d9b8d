"""RunawayLoop on hand-built trajectories: the loops it must catch (exact and near-same
retries, cycles, token burn) with exact onset and raise positions, and the look-alikes it
must leave alone (polling, back-off, paging, transient retries, exploration, long work)."""

from __future__ import annotations

import pickle

import pytest

from detectors.runaway_loop.detector import RunawayLoop, near_key
from detectors.testing import Session
from models.records import Action, Alert, Severity, Step


def feed(steps: list[Step], **params: object) -> list[Alert]:
    detector = RunawayLoop(**params)  # type: ignore[arg-type]
    return [alert for step in steps for alert in detector.update(step)]


def warmup(s: Session) -> list[Step]:
    """Ordinary work before the interesting part."""
    steps = [s.start()]
    for path in ("src/app.py", "src/util.py", "tests/test_app.py"):
        steps += [s.model(), *s.tool("read_file", {"path": path}, result=f"# {path}\n...")]
    return steps


# -- loops ----------------------------------------------------------------------------


def test_exact_retry_after_failure_warns_at_the_second_identical_failure() -> None:
    s = Session("retry")
    steps = warmup(s)
    calls = []
    for _ in range(6):
        steps.append(s.model())
        call, result = s.tool(
            "bash",
            {"command": "npm install"},
            ok=False,
            error="npm ERR! code E401\nnpm ERR! Unable to authenticate",
        )
        steps += [call, result]
        calls.append((call, result))
    alerts = feed(steps)
    assert [(a.severity, a.onset_seq, a.raised_seq) for a in alerts] == [
        (Severity.WARN, calls[1][0].seq, calls[1][1].seq),  # onset: the first retry
        (Severity.CRITICAL, calls[1][0].seq, calls[4][0].seq),  # the 5th attempt
    ]
    warn, critical = alerts
    assert warn.action == Action.NOTIFY and critical.action == Action.KILL
    assert "npm ERR! code E401" in warn.reason and "nothing else tried" in warn.reason
    assert warn.evidence[0]["seq"] == calls[1][0].seq
    assert 0 <= warn.score <= 1 and 0 <= critical.score <= 1
    assert warn.alert_id != critical.alert_id


def test_near_same_retries_with_volatile_flags_and_a_diagnostic_between() -> None:
    s = Session("pip")
    steps = warmup(s)
    error = "ERROR: Could not find a version that satisfies the requirement acme-internal==2.1"
    variants = [
        "pip install -e '.[tests]'",
        "python -m pip install -e .[tests]",
        "pip install -e '.[tests]' --tmp-dir /tmp/pip-8e3f1a",
        "pip install --no-cache-dir -e '.[tests]'",
    ]
    calls = []
    for i, command in enumerate(variants):
        steps.append(s.model())
        call, result = s.tool("bash", {"command": command}, ok=False, error=error)
        steps += [call, result]
        calls.append(result)
        if i == 0:  # one look at the configuration between the first two tries
            steps += [s.model(), *s.tool("bash", {"command": "pip config list"}, result="")]
    alerts = feed(steps)
    assert len(alerts) == 1
    assert alerts[0].severity == Severity.WARN
    assert alerts[0].raised_seq == calls[2].seq  # 3 failures outnumber the 1 new call
    assert alerts[0].onset_seq == calls[1].seq - 1
    assert "1 other new call(s)" in alerts[0].reason


def test_search_read_cycle_with_reordered_query_and_noisy_pages() -> None:
    """A cycle of reads answered the same warns at its third cycle; it burns only
    tokens, so it is killed at ``critical_read_cycles`` (10), not ``critical_cycles``."""
    s = Session("cycle")
    steps = warmup(s)
    raised_at = []
    for i in range(10):
        q = "nrg_ind_ren 2019 electricity" if i % 2 else "electricity 2019 nrg_ind_ren"
        steps += s.tool("search", {"q": q, "num_results": 8}, result=f"Results for: {q}\n{i}")
        steps += s.tool(
            "visit_page",
            {"url": "https://a.example/x"},
            result=f"Title: x\nbody noise {i} {'abc' * i}",
        )
        call, result = s.tool(
            "visit_page", {"url": "https://b.example/y"}, result=f"Title: y\nmore noise {'xyz' * i}"
        )
        steps += [call, result]
        raised_at.append(result.seq)
    alerts = feed(steps)
    assert [(a.severity, a.raised_seq) for a in alerts] == [
        (Severity.WARN, raised_at[2]),  # the third full cycle
        (Severity.CRITICAL, raised_at[9]),  # the tenth: reads only, none failed
    ]
    assert alerts[0].onset_seq == raised_at[0] + 1  # the second search
    assert "a cycle of 3 calls" in alerts[0].reason
    assert len(alerts[1].evidence) <= 20


def test_edit_test_revert_cycle_warns_once_the_same_test_fails_again() -> None:
    s = Session("ETR")
    steps = warmup(s)
    edits, tests = [], []
    for _ in range(3):
        edit, _ = s.tool("edit_file", {"path": "src/app.py", "old": "a + 1", "new": "a - 1"})
        test, failed = s.tool("bash", {"command": "pytest -q"}, ok=False, error="2 failed")
        steps += [
            s.model(),
            edit,
            _,
            test,
            failed,
            *s.tool("bash", {"command": "git checkout -- src/app.py"}),
        ]
        edits.append(edit)
        tests.append(failed)
    alerts = feed(steps)
    assert [(a.severity, a.onset_seq, a.raised_seq) for a in alerts] == [
        (Severity.WARN, edits[1].seq, tests[1].seq)
    ]
    assert "failed again the same way" in alerts[0].reason


def etr_steps(edit_results: list[str]) -> tuple[list[Step], list[Step], list[Step]]:
    """Edit, failing test, revert, once per edit result; the edit's result as given."""
    s = Session("ETR2")
    steps = warmup(s)
    edits, tests = [], []
    for result in edit_results:
        steps.append(s.model())
        edit = s.tool(
            "edit_file", {"path": "src/app.py", "old": "a + 1", "new": "a - 1"}, result=result
        )
        steps += [*edit, s.model()]
        test = s.tool("bash", {"command": "pytest -q"}, ok=False, error="2 failed")
        steps += [*test, s.model(), *s.tool("bash", {"command": "git checkout -- src/app.py"})]
        edits.append(edit[0])
        tests.append(test[0])
    return steps, edits, tests


def test_rerunning_a_failed_test_after_the_same_edit_with_the_same_result_warns_at_once() -> None:
    # the same edit re-applied after its revert, giving the same result: running the
    # test that failed again is the loop, before its (predictable) failure comes back
    steps, edits, tests = etr_steps(["Edited src/app.py: 1 replacement"] * 3)
    (warn,) = feed(steps)
    assert (warn.severity, warn.onset_seq, warn.raised_seq) == (
        Severity.WARN,
        edits[1].seq,
        tests[1].seq,  # the call, not its result
    )
    assert "is run again after it failed" in warn.reason


def test_rerunning_a_failed_test_after_an_edit_with_a_new_result_waits_for_the_failure() -> None:
    results = ["Edited src/app.py: 1 replacement", "Edited src/app.py: 2 replacements"]
    steps, _, tests = etr_steps([*results, results[1]])
    (warn,) = feed(steps)
    # the edit's new result is progress: only the test failing again the same way warns
    assert warn.raised_seq > tests[1].seq + 1 and warn.onset_seq == tests[1].seq
    assert "failed again the same way" in warn.reason and "run again" not in warn.reason


def test_token_burn_confirms_a_two_call_cycle_at_its_first_repeat() -> None:
    s = Session("burn")
    steps = warmup(s)
    reads = []
    for _ in range(3):
        steps.append(s.model(tokens_in=60_000, tokens_out=3_500))
        read, done = s.tool("read_file", {"path": "notes/findings.md"}, result="partial; unclear")
        steps += [read, done, s.model(tokens_in=62_000, tokens_out=3_200)]
        steps += s.tool("python", {"code": "print(compare(candidates))"}, result="inconclusive")
        reads.append(read)
    alerts = feed(steps)
    assert alerts[0].severity == Severity.WARN
    assert alerts[0].onset_seq == reads[1].seq
    assert alerts[0].raised_seq == reads[1].seq + 3  # the repeated python call
    assert "output tokens a call" in alerts[0].reason and "tokens since" in alerts[0].reason


def test_critical_on_wasted_tokens_kills_and_names_the_checkpoint() -> None:
    s = Session("tokens")
    steps = warmup(s)
    steps.append(s.checkpoint("ckpt-1", commit="a" * 40))
    for _ in range(3):
        steps.append(s.model(tokens_in=400_000, tokens_out=100))
        steps += s.tool(
            "bash", {"command": "make build"}, ok=False, error="make: *** [all] Error 2"
        )
    alerts = feed(steps, critical_tokens=700_000)
    assert [a.severity for a in alerts] == [Severity.WARN, Severity.CRITICAL]
    assert alerts[1].action == Action.KILL and alerts[1].checkpoint_id == "ckpt-1"
    assert alerts[0].checkpoint_id is None


def test_a_different_loop_later_alerts_again_the_same_loop_does_not() -> None:
    s = Session("two")
    steps = warmup(s)
    for command in ("npm install", "cargo build"):
        for _ in range(3):
            steps += [
                s.model(),
                *s.tool("bash", {"command": command}, ok=False, error=f"{command} failed"),
            ]
        steps += [s.model(), *s.tool("read_file", {"path": f"{command}.log"}, result="log")]
    alerts = feed(steps)
    assert [a.severity for a in alerts] == [Severity.WARN, Severity.WARN]
    assert "npm install" in alerts[0].reason and "cargo build" in alerts[1].reason


def test_unrecorded_results_need_five_identical_calls() -> None:
    s = Session("blind")
    steps = warmup(s)
    calls = []
    for _ in range(5):
        call, result = s.tool("bash", {"command": "git diff --stat"})  # result: None
        steps += [s.model(), call, result]
        calls.append(result)
    alerts = feed(steps)
    assert [a.raised_seq for a in alerts] == [calls[4].seq]
    assert "results not recorded" in alerts[0].reason
    assert feed(steps[: calls[3].seq + 1]) == []


def test_results_joined_by_parent_step_id_when_calls_have_no_id() -> None:
    s = Session("trail")
    steps = warmup(s)
    for _ in range(2):
        call, result = s.tool(
            "page_down",
            {},
            ok=False,
            error="TypeError: forward() got an unexpected keyword argument ''",
        )
        steps += [s.model(), call.with_(call_id=None), result.with_(call_id=None)]
    alerts = feed(steps)
    assert len(alerts) == 1 and alerts[0].raised_seq == steps[-1].seq


def test_state_pickles_and_resumes_mid_loop() -> None:
    s = Session("resume")
    steps = warmup(s)
    for _ in range(6):
        steps += [s.model(), *s.tool("bash", {"command": "npm ci"}, ok=False, error="E401")]
    head, tail = steps[:18], steps[18:]
    a, b = RunawayLoop(), RunawayLoop()
    for step in head:
        a.update(step)
    b.load_state_dict(pickle.loads(pickle.dumps(a.state_dict())))
    assert [x for st in tail for x in a.update(st)] == [x for st in tail for x in b.update(st)]


@pytest.mark.parametrize(
    "results", [["Edited src/app.py: 1 replacement"] * 4, [f"Edited ({i})" for i in range(4)]]
)
def test_state_restored_at_any_step_gives_the_same_alerts(results: list[str]) -> None:
    # a call is shared by the window, the open calls, the chains and the fired loops:
    # a checkpoint taken while a call awaits its result must keep it one object
    steps, _, _ = etr_steps(results)
    want = feed(steps)
    assert want
    for cut in range(1, len(steps)):
        live = RunawayLoop()
        head = [a for st in steps[:cut] for a in live.update(st)]
        restored = RunawayLoop()
        restored.load_state_dict(pickle.loads(pickle.dumps(live.state_dict())))
        assert head + [a for st in steps[cut:] for a in restored.update(st)] == want, cut


# -- look-alikes that are not loops ----------------------------------------------------


def test_polling_with_changing_results_is_not_a_loop() -> None:
    s = Session("poll")
    steps = warmup(s)
    for status in (
        "queued",
        "in_progress 1/6",
        "in_progress 3/6",
        "in_progress 4/6",
        "in_progress 5/6",
        "completed success",
    ):
        steps += [
            s.model(),
            *s.tool("bash", {"command": "gh run view 4566744137 --json status"}, result=status),
        ]
    assert feed(steps) == []


def test_polling_with_growing_waits_is_not_a_loop_even_with_the_same_answer() -> None:
    s = Session("backoff")
    steps = warmup(s)
    for wait in (5, 10, 20, 40, 80, 160):
        steps += [
            s.model(),
            *s.tool(
                "http",
                {"url": "https://api.example/jobs/77"},
                result='{"status":"RUNNING"}',
                seconds=wait,
            ),
        ]
    assert feed(steps) == []


def test_a_cycle_whose_duration_grows_by_chance_is_still_a_loop() -> None:
    # Search, read, read over the same sources: each cycle takes the model's and the
    # tools' time, which varies (6 s, 12 s, 21 s, ...). That is not an agent waiting
    # longer: back-off is a call repeated back to back, or a sleep call of its own.
    s = Session("slower")
    steps = warmup(s)
    searches = []
    hits = "1. https://en.wikipedia.org/wiki/1992_speed_skating 2. https://olympics.example/1992"
    for seconds in (1.0, 3.0, 6.0, 9.0, 12.0):
        steps.append(s.model())
        call, done = s.tool(
            "web_search",
            {"query": "fastest 1000m speed skater 1992 olympics"},
            result=hits,
            seconds=seconds,
        )
        steps += [call, done]
        searches.append(call)
        for url in hits.split()[1::2]:
            steps += [
                s.model(),
                *s.tool("fetch_url", {"url": url}, result="Results table ...", seconds=seconds),
            ]
    alerts = feed(steps)
    # onset: the first repeat of the cycle, as for any loop
    assert [(a.severity, a.onset_seq) for a in alerts][:1] == [(Severity.WARN, searches[1].seq)]


def test_paging_through_a_file_is_not_a_loop() -> None:
    s = Session("pages")
    steps = warmup(s)
    for start in range(1, 1000, 50):
        steps += [
            s.model(),
            *s.tool("bash", {"command": f"sed -n {start},{start + 49}p src/big.py"}, result="..."),
        ]
        steps += [
            s.model(),
            *s.tool(
                "view", {"path": "src/big.py", "view_range": [start, start + 49]}, result="..."
            ),
        ]
    assert feed(steps) == []


def test_transient_failure_then_success_is_fine() -> None:
    s = Session("transient")
    steps = warmup(s)
    steps += [
        s.model(),
        *s.tool("fetch_url", {"url": "https://x.example/a"}, ok=False, error="HTTP 503"),
    ]
    steps += [s.model(), *s.tool("fetch_url", {"url": "https://x.example/a"}, result="Title: a")]
    steps += [s.model(), *s.tool("bash", {"command": "pnpm install"}, ok=False, error="ECONNRESET")]
    steps += [s.model(), *s.tool("bash", {"command": "pnpm install"}, ok=False, error="ECONNRESET")]
    steps += [s.model(), *s.tool("bash", {"command": "pnpm install"}, result="done")]
    alerts = feed(steps)
    # one retry that failed the same way is worth a notice; it worked afterwards
    assert [a.severity for a in alerts] == [Severity.WARN]
    assert feed(steps[:-6] + steps[-3:]) == []


def test_new_patches_to_one_file_under_a_test_failing_alike_are_attempts() -> None:
    """Issue 26: attempts at one sub-goal (the same test made green) that keep failing
    are a loop even when every attempt is different code (before, this was progress)."""
    s = Session("tdd")
    steps = warmup(s)
    tests = []
    for word in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        test, failed = s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
        steps += [s.model(), test, failed]
        steps += [s.model(), *s.tool("edit_file", {"path": "src/app.py", "old": "x", "new": word})]
        tests.append(failed)
    alerts = feed(steps)
    # the first edit changed a file never changed before (progress): the series starts
    # at the run after it, warns at its third failure alike, kills at its fifth
    assert [(a.severity, a.raised_seq) for a in alerts] == [
        (Severity.WARN, tests[3].seq),
        (Severity.CRITICAL, tests[5].seq),
    ]
    assert "attempts at one sub-goal" in alerts[0].reason


def test_test_fix_test_with_edits_to_new_files_is_progress() -> None:
    s = Session("tdd")
    steps = warmup(s)
    for i, word in enumerate(("alpha", "beta", "gamma", "delta", "epsilon", "zeta")):
        steps += [s.model(), *s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")]
        edit = {"path": f"src/mod{i}.py", "old": "x", "new": word}
        steps += [s.model(), *s.tool("edit_file", edit)]
    assert feed(steps) == []


def test_a_failure_that_changes_between_attempts_is_progress() -> None:
    s = Session("tdd")
    steps = warmup(s)
    for name in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        failure = f"FAILED tests/test_app.py::test_{name}"  # another test fails each time
        steps += [s.model(), *s.tool("bash", {"command": "pytest -q"}, ok=False, error=failure)]
        steps += [s.model(), *s.tool("edit_file", {"path": "src/app.py", "old": "x", "new": name})]
    assert feed(steps) == []


def test_an_edit_and_its_revert_are_different_actions() -> None:
    s = Session("revert")
    steps = warmup(s)
    edit = {"path": "src/app.py", "old": "encode(a)", "new": "encode(decode(a))"}
    undo = {"path": "src/app.py", "old": "encode(decode(a))", "new": "encode(a)"}
    for args in (edit, undo, edit):
        steps += [s.model(), *s.tool("bash", {"command": "npm test"}, ok=False, error="1 failing")]
        steps += [s.model(), *s.tool("edit_file", args)]
    assert feed(steps) == []


def test_trying_other_numbers_after_a_success_is_not_a_repeat() -> None:
    s = Session("answers")
    steps = warmup(s)
    for answer in (1959, 1960, 1961, 1962, 8):
        steps += [
            s.model(),
            *s.tool(
                "http",
                {
                    "method": "POST",
                    "url": "http://10.0.4.17:9000/score",
                    "json": {"answer": str(answer)},
                },
                result='{"correct":false}',
            ),
        ]
    assert feed(steps) == []


def test_exploring_many_files_is_not_a_loop() -> None:
    s = Session("explore")
    steps = warmup(s)
    for i in range(60):
        steps += [
            s.model(),
            *s.tool("read_file", {"path": f"src/pkg/mod{i}.py"}, result=f"# mod{i}"),
        ]
        if i % 5 == 0:
            steps += [
                s.model(),
                *s.tool("grep", {"pattern": f"def f{i}", "path": "src"}, result=""),
            ]
    assert feed(steps) == []


def test_a_long_healthy_session_stays_quiet() -> None:
    s = Session("long")
    steps = warmup(s)
    for i in range(400):
        steps.append(s.model(tokens_in=20_000 + 100 * (i % 50)))
        steps += s.tool("read_file", {"path": f"src/m{i % 97}.py"}, result=f"# m{i % 97} v{i}")
        if i % 3 == 0:
            steps += s.tool(
                "edit_file", {"path": f"src/m{i % 97}.py", "old": f"x{i}", "new": f"y{i}"}
            )
            steps += s.tool("bash", {"command": "pytest -q"}, result=f"{i} passed")
        if i % 40 == 0:
            steps.append(s.checkpoint(f"ckpt-{i}"))
    assert feed(steps) == []


# -- parallel calls cancelled by a failing sibling ---------------------------------------

_READS = [("read_file", {"path": f"src/mod_{i}.py"}) for i in range(5)]


def _as_errors(steps: list[Step]) -> list[Step]:
    """The same stream as a decoder that does not know cancellations would give it."""
    return [st.with_(status="error") if st.status == "cancelled" else st for st in steps]


@pytest.mark.parametrize("batches", [1, 5])
def test_reads_cancelled_by_a_failing_sibling_are_not_failures(batches: int) -> None:
    s = Session("siblings")
    steps = warmup(s)
    for b in range(batches):  # one batch of 5 reads, or 5 batches of one read each
        reads = _READS if batches == 1 else _READS[b : b + 1]
        steps += [
            s.model(),
            *s.batch(
                [*reads, ("bash", {"command": f"make t{b}"})],
                failed=len(reads),
                error=f"make: *** no rule t{b}",
            ),
        ]
    assert feed(steps) == []
    # the control: had the five reads failed on their own, it is a retry loop
    assert Severity.CRITICAL in {a.severity for a in feed(_as_errors(steps))}


def test_a_failure_repeated_beside_cancelled_siblings_still_alerts() -> None:
    s = Session("npm")
    steps = warmup(s)
    npm = []
    for _ in range(6):
        steps.append(s.model())
        batch = s.batch(
            [("read_file", {"path": "package.json"}), ("bash", {"command": "npm install"})],
            failed=1,
            error="npm ERR! code E401",
        )
        steps += batch
        npm.append(batch[1])
    alerts = feed(steps)
    assert [a.severity for a in alerts] == [Severity.WARN, Severity.CRITICAL]
    assert {a.onset_seq for a in alerts} == {npm[1].seq}
    assert "npm ERR! code E401" in alerts[0].reason  # the chain of the real failures
    assert all("`bash npm install` failed" in a.reason for a in alerts)
    assert not any("Sibling" in a.reason for a in alerts)


def test_a_cancelled_retry_neither_ends_nor_extends_a_failure_chain() -> None:
    s = Session("chain")
    steps = warmup(s)
    error = "fatal: could not read Username for 'https://github.com'"
    first = s.tool("bash", {"command": "git push"}, ok=False, error=error)
    cancelled = s.batch(  # its failing sibling was read before: nothing new is tried
        [("bash", {"command": "git push"}), ("read_file", {"path": "src/app.py"})],
        failed=1,
        error="EACCES: permission denied",
    )
    again = s.tool("bash", {"command": "git push"}, ok=False, error=error)
    steps += [s.model(), *first, s.model(), *cancelled, s.model(), *again]
    alerts = feed(steps)
    # the second real failure is the first retry that failed: warned there, with 2
    # failures counted (the cancelled push was no attempt, nor did it work)
    assert [(a.severity, a.raised_seq) for a in alerts] == [(Severity.WARN, again[1].seq)]
    assert alerts[0].reason.startswith("2 near-identical calls")


# -- pieces ----------------------------------------------------------------------------


def test_near_key_ignores_word_order_and_random_suffixes_but_keeps_positions() -> None:
    assert near_key('search(q="a b c")')[0] == near_key('search(q="c a b")')[0]
    assert (
        near_key('bash(command="npm i --cache <tmp>/c-bd5220")')[0]
        == near_key('bash(command="npm i --cache <tmp>/c-<n>e2515")')[0]
    )
    assert (
        near_key('view(path="a.py",view_range=[1,50])')[0]
        != near_key('view(path="a.py",view_range=[51,100])')[0]
    )
    assert near_key('edit(new="xx",old="yy")')[0] != near_key('edit(new="yy",old="xx")')[0]


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("window", 5),
        ("max_period", 0),
        ("warn_cycles", 1),
        ("critical_cycles", 2),
        ("burn_ratio", 1.0),
        ("critical_tokens", 0),
        ("critical_cost", 0.0),
        ("wait_growth", 1.0),
    ],
)
def test_bad_parameters_name_themselves(param: str, value: float) -> None:
    with pytest.raises(ValueError, match=param):
        RunawayLoop(**{param: value})  # type: ignore[arg-type]


# -- any session length ------------------------------------------------------------------


@pytest.mark.parametrize("period", [1, 2, 3])
def test_a_loop_longer_than_the_window_is_judged_without_error_in_bounded_state(
    period: int,
) -> None:
    """A poll repeated for hours outlives the detector's window of calls: the rules see the
    repeats the window still holds (an IndexError here once made the rest of a 400-step
    session dead letters), and the state stays the same size however long it goes on."""
    s = Session()
    steps = warmup(s)
    targets = [f"deploy/web-{i}" for i in range(period)]
    sizes = {}
    detector = RunawayLoop()
    alerts: list[Alert] = []
    for step in steps:
        alerts += detector.update(step)
    for i in range(1_500):
        for step in s.tool(
            "kubectl_rollout_status",
            {"target": targets[i % period]},
            result="Waiting for rollout: 2 of 3 updated replicas are available",
        ):
            alerts += detector.update(step)
        if i in (300, 1_499):
            sizes[i] = len(pickle.dumps(detector.state_dict()))
    assert alerts and alerts[0].detector == "runaway_loop"
    assert sizes[1_499] <= sizes[300] * 1.1
