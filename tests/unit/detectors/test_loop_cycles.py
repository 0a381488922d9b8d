"""Unit tests of runaway_loop's rule modules: loop_cycles, loop_retries, loop_records."""

from __future__ import annotations

import pickle

from detectors.runaway_loop.cycles import (
    best_period,
    confirmed,
    current_cycle,
    cycle_key,
    judge_cycle,
    near,
    repeats,
    shows_progress,
)
from detectors.runaway_loop.records import FailureChain, LoopCall
from detectors.runaway_loop.retries import (
    add_failure,
    end_chains,
    reasked,
    retry_finding,
    same_answer,
)
from features.calls.action_keys import action_facts, argument_facts, numbers_crc

SECOND = 1_000_000_000


def call(
    seq: int,
    action: str,
    *,
    tool: str = "bash",
    arguments: str = "{}",
    ts: int | None = None,
    status: str | None = None,
    head: int | None = None,
    body: int | None = None,
    novel: bool = False,
    acts: bool = False,
    reads: bool = False,
) -> LoopCall:
    """A LoopCall as the detector builds it from a call's features."""
    key, words, exact, label = action_facts(tool, action)
    names, values = argument_facts(arguments)
    return LoopCall(
        seq, f"s/{seq}", f"t:{seq}", seq * SECOND if ts is None else ts, tool, key, exact,
        numbers_crc(arguments), words, label, novel, names, values, reads, acts,
        0, 0, 0, 0.0, status, head, body,
    )  # fmt: skip


def test_near_calls_share_the_words_of_what_changed() -> None:
    a = call(1, 'bash(command="npm install")')
    b = call(2, 'bash(command="rm -rf node_modules && npm install")')
    c = call(3, 'bash(command="cargo build --release")')
    assert near(a, b) and near(b, a)
    assert not near(a, c)
    assert not near(a, call(4, 'sh(command="npm install")', tool="sh"))


def test_repeats_is_not_polling_with_a_growing_wait_nor_a_new_page() -> None:
    window = [
        call(i, 'bash(command="curl -s status")', ts=t) for i, t in ((1, 0), (2, 10 * SECOND))
    ]
    steady = call(3, 'bash(command="curl -s status")', ts=20 * SECOND)
    backoff = call(3, 'bash(command="curl -s status")', ts=40 * SECOND)
    assert repeats(window, steady, 1, 1.5)
    assert not repeats(window, backoff, 1, 1.5)  # waited 30 s after 10 s: backing off
    done = [call(1, 'read(path="a.py", offset=<n>)', arguments='{"offset": 1}', status="ok")]
    page = call(2, 'read(path="a.py", offset=<n>)', arguments='{"offset": 51}')
    assert not repeats(done, page, 1, 1.5)  # other numbers after a success: a new page
    done[0].status = "error"
    assert repeats(done, page, 1, 1.5)  # after a failure, numbers are retry noise


def test_progress_is_a_failure_fixed_or_a_new_answer() -> None:
    fail, fixed = call(1, "t()", status="error", head=1), call(2, "t()", status="ok", head=2)
    assert shows_progress([fail, fixed], 1, 1)
    same = [
        call(1, "t()", status="ok", head=5, body=7),
        call(2, "t()", status="ok", head=5, body=7),
    ]
    assert not shows_progress(same, 1, 1)
    same[1].body = 8
    assert not shows_progress(same, 1, 1)  # a body that differs in volatile parts only
    same[0].digest, same[1].digest = 7, 8
    assert shows_progress(same, 1, 1)  # back to back: what the result says changed
    cycle = [
        call(1, "a()", head=1, body=1),
        call(2, "b()", head=2, body=2),
        call(3, "a()", head=1, body=9),
    ]
    assert not shows_progress(cycle, 2, 2)  # inside a cycle only the first line counts
    cycle[2].head = 3
    assert shows_progress(cycle, 2, 2)


def test_best_period_and_the_cycle_identity_whatever_the_entry() -> None:
    a, b = call(1, "a()"), call(2, "b()")
    assert cycle_key([a, b]) == cycle_key([b, a])
    window = [a, b, call(3, "a()"), call(4, "b()")]
    assert best_period([0, 0, 2]) == (2, 2)
    assert current_cycle(window, [0, 0, 2]) == (cycle_key([a, b]), 1)
    assert current_cycle(window, [0, 0, 1]) is None


def test_judge_cycle_counts_known_results_and_asks_more_of_unknown_ones() -> None:
    known = [call(i, 'bash(command="make")', status="error", head=1, body=1) for i in (1, 2, 3)]
    finding = judge_cycle(
        known,
        [0, 2, 0],
        settled=True,
        warn_cycles=3,
        critical_cycles=5,
        critical_read_cycles=10,
        models=0,
        out_tokens=0,
        burn_ratio=4.0,
    )
    assert finding is not None
    assert finding.onset is known[1] and finding.cycles == 3 and finding.kill_at == 5
    assert finding.reason.startswith("3 tool calls since step 1 repeat the same call")
    unknown = [call(i, 'bash(command="git diff --stat")') for i in (1, 2, 3)]
    args = dict(warn_cycles=3, critical_cycles=5, critical_read_cycles=10, models=0,
                out_tokens=0, burn_ratio=4.0)  # fmt: skip
    assert judge_cycle(unknown, [0, 2, 0], settled=True, **args) is None  # type: ignore[arg-type]
    five = [call(i, 'bash(command="git diff --stat")') for i in range(1, 6)]
    found = judge_cycle(five, [0, 4, 0], settled=True, **args)  # type: ignore[arg-type]
    assert found is not None and "(results not recorded)" in found.reason


def test_confirmed_names_a_failure_repeated_and_token_burn() -> None:
    cycle = [call(1, "edit()", body=1), call(2, "test()", status="error", body=2)]
    cycle[1].error = 99
    again = [call(3, "edit()", body=1), call(4, "test()", status="error")]
    again[1].error = 99
    assert "failed again the same way" in confirmed(
        cycle, again, models=0, out_tokens=0, burn_ratio=4.0
    )
    pending = [call(3, "edit()", body=1), call(4, "test()")]
    assert "is run again after it failed" in confirmed(
        cycle, pending, models=0, out_tokens=0, burn_ratio=4.0
    )
    start = call(1, "look()")
    start.models, start.out_tokens = 4, 2_000  # 500 tokens a model call before
    burn = confirmed([start], [call(2, "look()")], models=6, out_tokens=12_000, burn_ratio=4.0)
    assert "5,000 output tokens a call" in burn
    assert not confirmed([start], [call(2, "look()")], models=6, out_tokens=3_000, burn_ratio=4.0)


def test_a_failure_chain_fires_on_a_bare_retry_and_ends_on_success() -> None:
    chains: dict[int, FailureChain] = {}
    first = call(1, 'bash(command="npm install")', novel=True)
    chain = add_failure(chains, first, "npm ERR! code E404", novel=1, max_chains=4)
    assert retry_finding(chain, first, 3) is None
    retry = call(2, 'bash(command="npm install")')
    assert add_failure(chains, retry, "npm ERR! code E404", novel=1, max_chains=4) is chain
    finding = retry_finding(chain, retry, 3)
    assert finding is not None and finding.onset is retry and finding.count == 2
    assert "retried with nothing else tried" in finding.reason
    assert retry.chain == chain.ident and first.error == retry.error != 0
    end_chains(chains, call(3, 'bash(command="npm install")'))
    assert chains == {}


def test_failures_between_new_work_must_outnumber_it() -> None:
    chains: dict[int, FailureChain] = {}
    findings = []
    for seq in range(1, 5):
        novel = seq  # an edit between every two test runs: one new call each time
        run = call(seq, 'bash(command="pytest -q")')
        chain = add_failure(chains, run, "1 failed", novel=novel, max_chains=4)
        findings.append(retry_finding(chain, run, 3))
    assert findings == [None, None, None, None]


def test_same_answer_to_changing_arguments_warns_at_warn_cycles() -> None:
    answers = None
    text = "TypeError: forward() got an unexpected keyword argument 'temperature'"
    results = []
    for seq, value in enumerate(("a b", "c d", "e f"), 1):
        c = call(seq, f'run(task="{value}")', tool="run", arguments=f'{{"task": "{value}"}}')
        answers, finding = same_answer(answers, c, text, warn_cycles=3, critical_read_cycles=10)
        results.append(finding)
    assert results[:2] == [None, None]
    assert results[2] is not None and results[2].kill_at == 10 and results[2].count == 3
    receipt = call(4, 'edit(path="x")', tool="edit", acts=True)
    assert same_answer(answers, receipt, text, warn_cycles=3, critical_read_cycles=10) == (
        None,
        None,
    )


def test_a_request_reworded_only_warns() -> None:
    asked: list[LoopCall] = []
    count = 0
    found = []
    queries = (
        "bird species lisbon",
        "lisbon bird species list",
        "list of bird species in lisbon",
        "bird species of lisbon",
    )
    for seq, q in enumerate(queries, 1):
        c = call(seq, f'search(query="{q}")', tool="search", arguments=f'{{"query": "{q}"}}')
        asked, count, finding = reasked(asked, count, c, command=False, warn_cycles=3)
        found.append(finding)
    assert found[:3] == [None, None, None]
    assert found[3] is not None and found[3].warn_only and found[3].count == 4
    cmd = call(5, 'bash(command="ls")', arguments='{"command": "ls -la the folder"}')
    assert reasked(asked, count, cmd, command=True, warn_cycles=3) == ([], 0, None)


def test_records_pickle_under_the_detectors_module_path() -> None:
    c = call(1, "a()")
    data = pickle.dumps(c)
    assert b"detectors.runaway_loop.detector" in data and b"_Call" in data
    assert pickle.loads(data) == c


def test_confirmed_reads_repeats_longer_than_one_cycle() -> None:
    # a failed upload polled again and again: the repeats held (three cycles and the
    # pending call) outnumber the cycle's two calls; each is compared with its place
    # in the cycle (a Tempo export of 233 calls raised IndexError here: 14 dead letters)
    cycle = [call(1, "poll()", body=1), call(2, "upload()", status="error", body=2)]
    cycle[1].error = 7
    repeated = [
        call(3, "poll()", body=1),
        call(4, "upload()", body=2),
        call(5, "poll()", body=1),
        call(6, "upload()", body=2),
        call(7, "poll()", body=1),
        call(8, "upload()"),
    ]
    assert "is run again after it failed" in confirmed(
        cycle, repeated, models=0, out_tokens=0, burn_ratio=4.0
    )


def test_swipes_with_no_screen_recorded_move_on_for_a_poll_s_allowance() -> None:
    """Swiping through a contact list (adb ``input swipe``, results not recorded) moves
    the screen by design: five swipes are no loop, as five waits of a poll are not;
    scrolling on and on still is. A tap repeated five times unseen still warns."""
    args = dict(warn_cycles=3, critical_cycles=5, critical_read_cycles=10, models=0,
                out_tokens=0, burn_ratio=4.0)  # fmt: skip
    swipe = 'bash(command="adb -s emulator-5554 shell input swipe 540 1600 540 400 300")'
    five = [call(i, swipe) for i in range(1, 6)]
    assert judge_cycle(five, [0, 4, 0], settled=True, **args) is None  # type: ignore[arg-type]
    eight = [call(i, swipe) for i in range(1, 9)]
    found = judge_cycle(eight, [0, 7, 0], settled=True, **args)  # type: ignore[arg-type]
    assert found is not None and "(results not recorded)" in found.reason
    tap = 'bash(command="adb -s emulator-5554 shell input tap 540 1600")'
    taps = [call(i, tap) for i in range(1, 6)]
    assert judge_cycle(taps, [0, 4, 0], settled=True, **args) is not None  # type: ignore[arg-type]
