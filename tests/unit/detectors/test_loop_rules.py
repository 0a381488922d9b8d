"""The loop rules judged by results (detectors/runaway_loop/rules.py), and the hard cases they
decide in RunawayLoop: the same failure while the arguments change is a loop; a few
identical re-reads (around a compaction, after an edit) are not; reads answered the
same are killed only on more evidence than failures or actions."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from detectors.runaway_loop.rules import (
    argument_values,
    critical_needed,
    is_request,
    result_signature,
    same_shape,
    specific,
)
from detectors.testing import Session
from models.records import Action, Severity, Step
from tests.unit.detectors.test_runaway_loop import feed, warmup

# -- pure rules -------------------------------------------------------------------------


def test_signature_masks_what_the_call_passed_and_keeps_what_the_tool_counted() -> None:
    def sig(text: str, args: dict[str, object]) -> str:
        return result_signature(text, argument_values(args))

    # the echoed query, quoted or cut off by the runtime
    a = sig("No results found for query: 'bird species 2019'.", {"query": "bird species 2019"})
    b = sig("No results found for query: 'YouTube L1vXCYZ max", {"query": "YouTube L1vXCYZ max"})
    assert a.startswith("no results found for query: <arg>") and b.startswith(a[:-1])
    # offsets and pages the agent chose; paths, URLs, ids and timestamps
    assert sig("offset 300 beyond end of file /w/a.py", {"offset": 300}) == sig(
        "offset 600 beyond end of file /w/b.py", {"offset": 600}
    )
    assert sig("404 for url: https://x.org/a?id=1 at 2026-01-01T00:00:00Z", {}) == sig(
        "404 for url: https://x.org/b?id=2 at 2026-01-02T10:00:00Z", {}
    )
    # counts the tool computed are the answer: fewer failures is progress
    assert sig("3 failed, 40 passed", {"command": "pytest"}) != sig(
        "2 failed, 41 passed", {"command": "pytest"}
    )
    assert len(sig("x" * 5000, {})) <= 160


def test_generic_errors_are_not_specific_and_shapes_need_the_same_argument_names() -> None:
    assert not specific(result_signature("Exit code 1"))
    assert not specific(result_signature("npm install failed", ("npm install",)))
    assert specific(result_signature("TypeError: forward() got an unexpected keyword 'x'"))
    assert same_shape("search", {"q"}, "search", {"q"})
    assert not same_shape("search", {"q"}, "fetch", {"q"})
    assert not same_shape("search", {"q"}, "search", {"q", "page"})


@pytest.mark.parametrize(
    ("failed", "reads_only", "expected"), [(False, True, 10), (True, True, 5), (False, False, 5)]
)
def test_reads_answered_the_same_need_more_evidence_to_kill(
    failed: bool, reads_only: bool, expected: int
) -> None:
    assert (
        critical_needed(
            critical_cycles=5, critical_read_cycles=10, failed=failed, reads_only=reads_only
        )
        == expected
    )


# -- hard cases in RunawayLoop ------------------------------------------------------------


def test_paging_answered_by_the_same_error_is_a_loop() -> None:
    """Changing offsets look like progress; every call answered by one error is not."""
    s = Session("paging-error")
    steps = warmup(s)
    calls = []
    for word in ("retries", "timeouts", "pagination", "webhooks", "quotas", "errors"):
        steps.append(s.model())
        call, result = s.tool(
            "search_docs",
            {"query": word},
            ok=False,
            error=f"RateLimitError: quota exceeded for key sk-{word[:3]}7f3a9c21, retry later",
        )
        steps += [call, result]
        calls.append(call)
    alerts = feed(steps)
    assert [(a.severity, a.action) for a in alerts] == [
        (Severity.WARN, Action.NOTIFY),
        (Severity.CRITICAL, Action.KILL),
    ]
    assert alerts[0].raised_seq == calls[1].seq + 1  # the second failure, nothing else tried
    assert alerts[1].raised_seq == calls[4].seq + 1  # the fifth failure
    assert "changing arguments" in alerts[0].reason and "the same failure" in alerts[0].reason


def test_a_tweaked_flag_answered_by_the_same_error_is_a_loop_despite_a_look_between() -> None:
    s = Session("flags")
    steps = warmup(s)
    error = "TypeError: PageDownTool.forward() got an unexpected keyword argument '{}'"
    for flag in ("page_down", "arguments", "", "page"):
        steps.append(s.model())
        steps += s.tool("page_down", {flag or "x": ""}, ok=False, error=error.format(flag))
    alerts = feed(steps)
    assert alerts and alerts[0].severity == Severity.WARN
    assert "TypeError" in alerts[0].reason


def test_searches_that_find_nothing_then_something_are_exploration() -> None:
    """A success of the same tool with other arguments ends the chain: the tool works,
    the agent is searching."""
    s = Session("search")
    steps = warmup(s)
    queries = ["saturn moons radius", "saturn moons 1980", "voyager moons", "jpl moons", "iapetus"]
    for i, query in enumerate(queries):
        steps.append(s.model())
        if i % 2 == 0:
            steps += s.tool(
                "web_search",
                {"query": query},
                ok=False,
                error=f"No results found for query: '{query}'. Use a less specific query.",
            )
        else:
            steps += s.tool("web_search", {"query": query}, result=f"1. result for {query}")
    assert feed(steps) == []


def test_different_commands_failing_with_a_generic_exit_code_are_not_one_loop() -> None:
    s = Session("generic")
    steps = warmup(s)
    for command in ("grep -r foo src", "pytest -q tests/a.py", "ls missing/", "make lint"):
        steps += [s.model(), *s.tool("bash", {"command": command}, ok=False, error="Exit code 1")]
        steps += [s.model(), *s.tool("read_file", {"path": "notes.txt"}, result=command)]
    assert feed(steps) == []


def test_a_few_identical_rereads_with_the_same_answer_are_not_a_loop() -> None:
    """Three identical calls answered the same (OpenLIT's count) stay quiet; the fourth
    warns; reads answered the same are killed at critical_read_cycles, not before."""
    s = Session("rereads")
    steps = warmup(s)
    results = []
    for _ in range(10):
        call, result = s.tool("get_channels", {}, result="general\nrandom\nprivate")
        steps += [s.model(), call, result]
        results.append(result)
    assert feed(steps[: steps.index(results[2]) + 1]) == []
    alerts = feed(steps)
    assert [(a.severity, a.raised_seq) for a in alerts] == [
        (Severity.WARN, results[3].seq),
        (Severity.CRITICAL, results[9].seq),
    ]
    assert "every answer the same" in alerts[0].reason


def test_the_same_payment_repeated_is_killed_at_critical_cycles() -> None:
    s = Session("pay")
    steps = warmup(s)
    results = []
    pay = {"recipient": "GB29NWBK60161331926819", "amount": 4.0, "subject": "Refund"}
    for _ in range(6):
        call, result = s.tool("send_money", pay, result="Transaction sent.")
        steps += [s.model(), call, result]
        results.append(result)
    alerts = feed(steps)
    assert [(a.severity, a.raised_seq) for a in alerts] == [
        (Severity.WARN, results[3].seq),
        (Severity.CRITICAL, results[4].seq),
    ]


def test_rereads_across_a_compaction_start_again() -> None:
    s = Session("compacted")
    steps = warmup(s)
    for i in range(6):
        if i == 3:
            steps.append(s.compaction())
        steps += [s.model(), *s.tool("read_file", {"path": "src/app.py"}, result="# app\nx = 1")]
    assert feed(steps) == []  # 3 before, 3 after: each a few re-reads


def test_rereading_one_file_whose_content_changes_is_not_a_cycle_of_two() -> None:
    """Six reads of one file, each answered differently, also match at period 2; the
    change of content is progress there too."""
    s = Session("changing")
    steps = warmup(s)
    for i in range(6):
        body = f"// a.rs\nfn {'abcdef'[i] * 3}() {{}}"
        steps += [s.model(), *s.tool("read", {"file": "a.rs"}, result=body)]
    assert feed(steps) == []


def test_rewording_a_request_that_gets_the_same_answer_is_a_loop() -> None:
    """A manager re-words its request to a helper three times and each time gets its
    own words back (the code printed the task and called nothing): the same answer,
    once the echo of its arguments is masked."""
    s = Session("reworded")
    steps = warmup(s)
    tasks = [
        "Please find the official 2011 census figures for tertiary education by gender",
        "Could you please retrieve the 2011 census counts of graduates, men and women",
        "Dear team member, help me get the official 2011 census numbers by gender",
    ]
    results = []
    for task in tasks:
        code = f'task = (\n    "{task[:40]}"\n    "{task[40:]}"\n)\nprint(task)'
        call, result = s.tool(
            "python", {"code": code}, result=f"Execution logs:\n{task}\nLast output: None"
        )
        steps += [s.model(), call, result]
        results.append(result)
    (alert,) = feed(steps)
    assert alert.raised_seq == results[2].seq and alert.severity == Severity.WARN
    assert "got the same answer `execution logs: <arg> last output: none`" in alert.reason


@pytest.mark.parametrize(
    ("tool", "arguments", "answer"),
    [
        # edits of other files: the same receipt is no lack of progress
        (
            "edit_file",
            lambda i: {"path": f"src/m{i}.py", "old": "TODO", "new": "NOTE"},
            lambda i: f"Edited src/m{i}.py: 1 replacement",
        ),
        # payments to other people: a receipt too
        (
            "send_money",
            lambda i: {"recipient": f"GB{i}1234567", "amount": 10 + i},
            lambda i: f"Transaction to GB{i}1234567 sent.",
        ),
        # searches with other answers
        (
            "web_search",
            lambda i: {"query": f"moons of saturn {'abc'[i]}"},
            lambda i: f"1. [{['Titan', 'Rhea', 'Iapetus'][i]}](https://w.org/{i}) radius",
        ),
    ],
)
def test_other_arguments_with_receipts_or_new_answers_are_not_a_loop(
    tool: str, arguments: object, answer: object
) -> None:
    s = Session("receipts")
    steps = warmup(s)
    for i in range(3):
        steps += [s.model(), *s.tool(tool, arguments(i), result=answer(i))]  # type: ignore[operator]
    assert feed(steps) == []


def test_mask_echo_masks_exactly_the_union_of_echoed_windows() -> None:
    """Against the plain definition: once a window of 16 starting at a multiple of 8 is
    found in the arguments (any echo of 23+ characters holds one), every character inside
    some window of 16 that the arguments contain is masked, runs of them as one ``<arg>``."""
    import random

    from detectors.runaway_loop.rules import mask_echo

    def reference(head: str, hay: str) -> str:
        if not any(head[i : i + 16] in hay for i in range(0, len(head) - 15, 8)):
            return head
        covered = [False] * len(head)
        for i in range(len(head) - 15):
            if head[i : i + 16] in hay:
                covered[i : i + 16] = [True] * 16
        out = []
        for j, ch in enumerate(head):
            if not covered[j]:
                out.append(ch)
            elif j == 0 or not covered[j - 1]:
                out.append("<arg>")
        return "".join(out)

    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "the", "census", "2011", "men", "x"]
    for _ in range(300):
        hay = " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        head = " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        if rng.random() < 0.5 and len(hay) > 20:  # splice pieces of the arguments in
            a = rng.randrange(len(hay) - 20)
            head = f"{head[:10]}{hay[a : a + rng.randint(10, 60)]}{head[10:]}"
        assert mask_echo(head, hay) == reference(head, hay), (head, hay)


def test_rereading_a_file_after_editing_it_is_not_a_loop() -> None:
    """Read, edit, then the file read three times more (to check the edit, then again
    before the next step): the first re-read shows the change, the others are re-reads."""
    s = Session("after-edit")
    steps = warmup(s)
    steps += [s.model(), *s.tool("read_file", {"path": "src/app.py"}, result="x = 1\ny = 2")]
    steps += [
        s.model(),
        *s.tool("edit_file", {"path": "src/app.py", "old": "x = 1", "new": "x = 3"}),
    ]
    for _ in range(3):
        steps += [s.model(), *s.tool("read_file", {"path": "src/app.py"}, result="x = 3\ny = 2")]
    assert feed(steps) == []
    # ... while the OpenLIT baseline counts four identical reads
    from trajwatch.analysis.evaluate import baseline_openlit

    assert baseline_openlit(steps) is not None


# -- one request re-worded: a loop of asking, when the answers bring nothing new --


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("first year Apple stock price closed above $50 raw non split adjusted", True),
        ("nonindigenous crocodiles Florida 2000 2020 site:nas.er.usgs.gov", True),
        ("Please transcribe the spoken line in this audio file exactly", True),
        ("src/requests/models.py", False),
        ("https://www.hsl.fi/en/hsl/news/facts-about-hsl", False),
        ("rg -n 'entry' src/constants/index.ts", False),
        ("npm install", False),
    ],
)
def test_a_request_in_words_is_told_from_paths_urls_and_commands(
    value: str, expected: bool
) -> None:
    assert is_request(value) is expected


def _searches(s: Session, queries: list[str]) -> list[Step]:
    steps: list[Step] = []
    for q in queries:
        steps.append(s.model())
        steps += s.tool("web_search", {"query": q}, result=f"1. [{q}](https://x.example/{len(q)})")
    return steps


REWORDED = [
    "Tri-Rail ridership May 27 2019 Pompano Beach arrivals",
    "Tri-Rail May 27 2019 ridership Pompano Beach station arrivals record",
    "Pompano Beach Tri-Rail arrivals May 27 2019 passengers",
    "Tri-Rail passengers Pompano Beach May 27 2019 ridership report",
]


def test_the_same_request_reworded_four_times_running_warns_never_kills() -> None:
    """Four searches back to back, each re-wording the one before, nothing done with
    any answer: a warning at the fourth (onset the first re-wording); more of the
    same never kills - re-wording may yet find something."""
    s = Session("reworded")
    steps = warmup(s) + _searches(s, REWORDED)
    alerts = feed(steps)
    calls = [st for st in steps if st.tool == "web_search" and st.kind.value == "tool_call"]
    assert [(a.severity, a.onset_seq, a.raised_seq) for a in alerts] == [
        (Severity.WARN, calls[1].seq, calls[3].seq)
    ]
    more = [f"{q} official figures" for q in REWORDED] * 3
    alerts = feed(steps + _searches(s, more))
    assert all(a.action == Action.NOTIFY for a in alerts)


def test_asking_again_in_the_same_words_warns_at_the_third() -> None:
    """The third search re-orders the words of the first (a quoted title moved): the
    agent asks what it already asked - a warning at three."""
    s = Session("again")
    queries = [
        "Pie Menus or Linear Menus, Which Is Better? 2015 DBLP",
        "Pie Menus or Linear Menus, Which Is Better? 2015 DBLP author metadata",
        'DBLP "Pie Menus or Linear Menus, Which Is Better?" 2015',
    ]
    steps = warmup(s) + _searches(s, queries)
    alerts = feed(steps)
    assert [a.raised_seq for a in alerts] == [steps[-2].seq]
    assert "same words" in alerts[0].reason


def _cabinets(s: Session, answer: Callable[[str, int], str]) -> list[Step]:
    """A text-world agent going to one cabinet after another and opening each (ALFWorld's
    ``go to cabinet 3``, ``open cabinet 3``); ``answer(verb, n)`` is what it is told."""
    steps = [s.start()]
    for n in range(3, 7):
        for verb in ("go to", "open"):
            steps.append(s.model())
            steps += s.tool("env_step", {"action": f"{verb} cabinet {n}"}, result=answer(verb, n))
    return steps


def test_requests_reworded_while_each_answer_is_new_are_exploring() -> None:
    """Each move answered with what that cabinet holds: every answer told the agent
    something new - exploring, not asking in circles. The same moves answered alike
    ("Nothing happens.", ALFWorld's answer to a move that does nothing) still warn."""
    held = {3: "a bread 2, a cup 1", 4: "nothing", 5: "a cd 2, a plate 3", 6: "a mug 1"}
    exploring = _cabinets(
        Session("exploring"),
        lambda verb, n: (
            f"You arrive at cabinet {n}. It is closed."
            if verb == "go to"
            else f"You open the cabinet {n}. In it, you see {held[n]}."
        ),
    )
    assert feed(exploring) == []
    circling = _cabinets(Session("circling"), lambda verb, n: "Nothing happens.")
    assert feed(circling)  # (the same answer to changing arguments: that rule's warning)


def test_searching_on_with_what_was_found_and_reading_a_folder_are_no_loop() -> None:
    """Acting on an answer between the searches (opening a hit), three re-wordings
    without a repeat, reading the files of one folder, or running commands that share
    words: none is one request asked over and over."""
    s = Session("fine")
    steps = warmup(s)
    for q in REWORDED:
        steps += _searches(s, [q])
        steps += s.tool("visit_page", {"url": f"https://x.example/{len(q)}"}, result="page")
    steps += _searches(s, REWORDED[:3])
    for name in ("models", "sessions", "adapters", "utils", "compat"):
        steps += s.tool("read_file", {"path": f"src/requests/{name}.py"}, result="code")
    for word in ("entry", "parse", "offset", "locale"):
        steps += s.tool("bash", {"command": f"rg -n '{word}' src tests"}, result=f"src/{word}")
    assert feed(steps) == []
