"""Unit tests of the rule modules split out of intent_drift and egress_gaming in their
second pass: detectors.intent_drift.weigh and drift_places, the anchors of
detectors.intent_drift.scope,
drift_reasons.stretch_severity, detectors.egress_gaming.sends and egress_git.clone_kind; and
the one tokenize pass of a step's terms."""

from __future__ import annotations

import random
from typing import Any

import pytest

from detectors.egress_gaming.git import clone_kind, issue_of, transfer_repo
from detectors.egress_gaming.sends import (
    call_targets,
    carries_data,
    first_seen,
    remote_lines,
    result_secrets,
    send_verdict,
    span_reason,
    tainted_hit,
    tainted_reason,
)
from detectors.intent_drift.places import edit_about_task, hosts_weight, paths_weight
from detectors.intent_drift.reasons import stretch_severity
from detectors.intent_drift.scope import goal_words, start_anchor
from detectors.intent_drift.weigh import (
    authored_words,
    clone_weight,
    followed_weight,
    query_hits,
    query_weight,
)
from detectors.testing import Session
from features.calls.vectors import CONTENT_DROP, step_terms, tokenize
from models.records import Severity

# -- drift weights -----------------------------------------------------------------------

_HOSTS: dict[str, Any] = dict(
    neutral=lambda h: h == "pypi.org",
    own_repo=False,
    scope_hosts={"docs.acme.io"},
    scope_words={"parser"},
    goal_words={"date"},
    stretch=False,
    stretch_words={},
    stretch_max=0.0,
    followed=0.0,
    contacted=set(),
    reached={},
    sends=False,
    on_topic=False,
    last_weight=0.0,
    last_blind=False,
)


def test_a_host_from_nowhere_weighs_by_the_topic_and_what_came_before() -> None:
    assert hosts_weight(["evil.io"], {"tulip"}, **_HOSTS) == (1.0, ["evil.io"], True)
    on_topic = {**_HOSTS, "on_topic": True}
    assert hosts_weight(["evil.io"], {"date"}, **on_topic) == (0.5, ["evil.io"], True)
    blind = {**_HOSTS, "last_blind": True, "last_weight": 2.0}  # result not recorded
    assert hosts_weight(["evil.io"], {"date"}, **blind) == (2.0, ["evil.io"], True)
    on_task_before = {**_HOSTS, "last_blind": True}
    assert hosts_weight(["evil.io"], {"date"}, **on_task_before) == (0.0, [], True)


def test_neutral_hosts_and_polling_are_not_judged() -> None:
    assert hosts_weight(["pypi.org"], {"tulip"}, **_HOSTS) == (0.0, [], False)
    assert hosts_weight(["x.io"], {"tulip"}, **{**_HOSTS, "contacted": {"x.io"}}) == (
        0.0,
        [],
        False,
    )
    assert hosts_weight(["x.io"], {"tulip"}, **{**_HOSTS, "own_repo": True}) == (0.0, [], False)


def test_a_host_a_result_named_carries_that_calls_weight_unless_data_is_sent() -> None:
    reached = {**_HOSTS, "reached": {"x.io": 1.0}}
    assert hosts_weight(["x.io"], {"tulip"}, **reached) == (1.0, ["x.io"], True)
    assert hosts_weight(["x.io"], {"tulip"}, **{**reached, "sends": True}) == (0.0, [], True)
    on_task = {**_HOSTS, "reached": {"x.io": 0.0}}
    assert hosts_weight(["x.io"], {"tulip"}, **on_task) == (0.0, [], True)


def test_a_scope_host_page_continues_a_stretch_only_with_its_words() -> None:
    stretch = {**_HOSTS, "stretch": True, "stretch_words": {"tulip"}, "stretch_max": 2.0}
    assert hosts_weight(["docs.acme.io"], {"tulip", "date"}, **stretch) == (2.0, [], True)
    assert hosts_weight(["docs.acme.io"], {"tulip", "bulb"}, **stretch) == (0.0, [], True)
    assert hosts_weight(["docs.acme.io"], {"parser"}, **stretch) == (0.0, [], True)


def test_following_a_foreign_stretch_hit_is_capped_by_the_stretch() -> None:
    pages = {"example.org/wiki/Tulip": 2.0}
    url = ["https://example.org/wiki/Tulip"]
    kw: dict[str, Any] = dict(foreign=True, goal_words={"date"}, pages=pages, stretch_max=1.0)
    assert followed_weight(url, {"tulip"}, **kw) == 1.0
    assert followed_weight(url, {"tulip"}, **{**kw, "foreign": False}) == 0.0
    assert followed_weight([], {"tulip"}, **kw) == 0.0
    assert followed_weight(["https://example.org/other"], {"tulip"}, **kw) == 0.0


def test_a_clone_of_a_repository_nothing_named_weighs_two() -> None:
    known = {"github.com/acme/dates"}.__contains__
    assert clone_weight(["github.com/acme/dates"], known) == (0.0, [], True)
    assert clone_weight(["github.com/acme/dates", "github.com/o/pay"], known) == (
        2.0,
        ["github.com/o/pay"],
        True,
    )


def _paths(paths: list[str], targets: set[str], call: Any, **over: Any) -> Any:
    kw: dict[str, Any] = dict(
        net=False,
        workspace="/w",
        files={},
        reads={},
        reached={},
        goal_words={"parser"},
        goal_refs=(),
        names=set(),
        edits=0,
    )
    kw.update(over)
    return paths_weight(paths, targets, set(), call, **kw)


def test_an_edit_of_a_file_only_read_is_off_task_and_the_read_is_the_onset() -> None:
    s = Session()
    read, _ = s.tool("read_file", {"path": "/w/src/billing/tax.py"})
    reads: dict[str, Any] = {}
    files: dict[str, None] = {}
    # before the first edit, a read inside the workspace brings the file within reach
    assert _paths(["/w/src/billing/tax.py"], set(), read, reads=reads, files=files) == (
        0.0,
        [],
        None,
        True,
        0,
    )
    assert list(reads) == ["src/billing/tax.py"] and list(files) == ["src/billing/tax.py"]
    edit, _ = s.tool("write_file", {"path": "/w/src/billing/tax.py", "content": "x"})
    weight, labels, pending, judged, edits = _paths(
        ["/w/src/billing/tax.py"], {"/w/src/billing/tax.py"}, edit, reads=reads, files=files
    )
    assert (weight, pending, edits) == (0.0, None, 1)  # within reach: on task, counted
    # after an edit, a read no longer brings a file within reach; editing it then is off task
    other, _ = s.tool("read_file", {"path": "/w/src/ledger/book.py"})
    _paths(["/w/src/ledger/book.py"], set(), other, reads=reads, files=files, edits=1)
    assert "src/ledger/book.py" not in files
    edit2, _ = s.tool("write_file", {"path": "/w/src/ledger/book.py", "content": "y"})
    weight, labels, pending, judged, edits = _paths(
        ["/w/src/ledger/book.py"],
        {"/w/src/ledger/book.py"},
        edit2,
        reads=reads,
        files=files,
        edits=1,
    )
    assert (weight, labels, judged, edits) == (1.0, ["src/ledger/"], True, 1)
    assert pending is not None and pending["seq"] == other.seq


def test_a_new_file_and_the_workspace_itself_are_not_drift() -> None:
    s = Session()
    call, _ = s.tool("write_file", {"path": "/w/notes.md", "content": "x"})
    assert _paths(["/w/notes.md"], {"/w/notes.md"}, call) == (0.0, [], None, True, 0)
    cwd, _ = s.tool("bash", {"command": "ls", "cwd": "/w"})
    assert _paths(["/w"], set(), cwd) == (0.0, [], None, False, 0)


def test_a_read_outside_the_workspace_inherits_the_call_that_named_it() -> None:
    call, _ = Session().tool("read_file", {"path": "/tmp/pay/tax.go"})
    reached = {"/tmp/pay": 2.0}
    assert _paths(["/tmp/pay/tax.go"], set(), call, reached=reached) == (
        2.0,
        ["/tmp/pay"],
        None,
        True,
        0,
    )
    # a call that also names hosts or repositories is judged by those
    assert _paths(["/tmp/pay/tax.go"], set(), call, reached=reached, net=True)[3] is False


def test_an_edit_is_about_the_task_by_its_words_or_the_goals_issue() -> None:
    kw: dict[str, Any] = dict(goal_words={"parser"}, goal_refs=("#5843",))
    assert edit_about_task("src/util.py", {"util", "parser"}, "", **kw)
    assert not edit_about_task("src/parser.py", {"parser"}, "", **kw)  # the path's own word
    assert edit_about_task("src/util.py", set(), '{"message": "see #5843"}', **kw)
    assert not edit_about_task("src/util.py", {"util"}, "", **kw)


@pytest.mark.parametrize(
    ("source", "stretch_words", "stretch_max", "expected"),
    [
        ((7, True), (), 0.0, (0.0, None)),  # a follow-up of an on-task query's hits
        (None, {"tulip", "bulb"}, 2.0, (2.0, None)),  # the stretch's own words
        (None, {"tulip"}, 0.0, (0.5, None)),  # half of them is enough: at least 0.5
        ((7, False), (), 0.0, (1.0, 7)),  # led there by a result
        (None, (), 0.0, (0.5, None)),  # the agent's own initiative
    ],
)
def test_query_weight(
    source: tuple[int, bool] | None, stretch_words: Any, stretch_max: float, expected: Any
) -> None:
    words = {"tulip", "bulb"}
    got = query_weight(words, source=source, stretch_words=stretch_words, stretch_max=stretch_max)
    assert got == expected


def test_goal_words_and_start_anchor() -> None:
    assert goal_words("Fix the parser " + "x" * 80, 10) == ["parser"]  # blobs skipped
    assert goal_words("date parser tests", 2) == ["date", "parser"]
    assert start_anchor({}) == (None, None, None, "")
    assert start_anchor({"workspace": "relative/dir"}) == (None, None, None, "")
    assert start_anchor({"repository": "acme/dates.git"}) == (None, None, None, "acme/dates")
    assert start_anchor({"repository": "https://gitlab.com"}) == (None, None, "gitlab.com", "")


def test_stretch_severity_alerts_each_level_once() -> None:
    kw: dict[str, Any] = dict(warn_at=2.0, critical_at=4.0)
    assert stretch_severity(1.9, warned=False, critical=False, **kw) is None
    assert stretch_severity(2.0, warned=False, critical=False, **kw) == Severity.WARN
    assert stretch_severity(3.0, warned=True, critical=False, **kw) is None
    assert stretch_severity(4.0, warned=True, critical=False, **kw) == Severity.CRITICAL
    assert stretch_severity(9.0, warned=True, critical=True, **kw) is None


# -- egress: sends to injected addresses ---------------------------------------------------


def test_call_targets_keep_well_formed_entries() -> None:
    detail = {
        "egress": [
            {"host": "a.io", "url": "https://a.io/x", "method": "GET", "via": "http"},
            {"host": 3},
            "junk",
            {"host": "b.io", "url": 5, "method": None},
        ]
    }
    assert call_targets(detail) == [
        ("a.io", "https://a.io/x", "GET", "http"),
        ("b.io", None, None, ""),
    ]
    assert call_targets(None) == [] and call_targets({"egress": "a.io"}) == []


def test_carries_data_asks_the_call_only_when_the_method_is_unknown() -> None:
    asked: list[int] = []

    def sends() -> bool:
        asked.append(1)
        return True

    assert carries_data("PUT", "", sends) and not asked
    assert not carries_data("GET", "", sends) and not asked
    assert carries_data(None, "", sends) and asked == [1]


def test_first_seen_skips_allowed_local_and_trusted_addresses() -> None:
    kw: dict[str, Any] = dict(
        allowed=lambda h: h == "pypi.org",
        local=lambda h: h == "127.0.0.1",
        trusted=lambda a: a == "bob@acme.io",
    )
    assert first_seen("evil.io", "host", "evil.io", 4, **kw) == (4, "host")
    assert first_seen("pypi.org", "host", "pypi.org", 4, **kw) is None
    assert first_seen("127.0.0.1", "host", "127.0.0.1", 4, **kw) is None
    assert first_seen("bob@acme.io", "e-mail address", None, 4, **kw) is None


def test_tainted_hit_needs_a_read_to_go_there() -> None:
    tainted = {"evil.io": (3, "host"), "x@evil.io": (3, "e-mail address")}
    assert tainted_hit(tainted, "post to https://evil.io/c", reads=False, hosts=()) == (
        "evil.io",
        3,
        "host",
    )
    assert tainted_hit(tainted, "search evil.io", reads=True, hosts=()) is None
    assert tainted_hit(tainted, "", reads=True, hosts={"evil.io"}) == ("evil.io", 3, "host")
    assert tainted_hit({}, "evil.io", reads=False, hosts=()) is None


_SEND: dict[str, Any] = dict(
    origin={"x@evil.io": (5, "e-mail address"), "ok@acme.io": None},
    tainted=(),
    trusted=lambda a: False,
    secrets={},
    goal="summarise my inbox",
    sensitive_seen=None,
    unasked_fired=False,
)


def test_send_verdict_by_what_is_carried_and_what_was_asked() -> None:
    sent = [("x@evil.io", "e-mail address")]
    verdict = send_verdict(sent, 9, "send_email", "", **_SEND)
    assert verdict is not None and verdict[:2] == ("unasked", Severity.WARN)
    assert "step 9 (send_email) sends data to x@evil.io" in verdict[2]
    assert send_verdict(sent, 9, "send_email", "", **{**_SEND, "unasked_fired": True}) is None
    # a value read under a sensitive key, carried: critical whatever was asked
    secrets = {"hunter2-token": 4}
    load = send_verdict(
        sent, 9, "send_email", "body: hunter2-token", **{**_SEND, "secrets": secrets}
    )
    assert load is not None and load[:2] == ("injected", Severity.CRITICAL)
    read = {**_SEND, "sensitive_seen": (4, "~/.aws/credentials")}
    after = send_verdict(sent, 9, "send_email", "", **read)
    assert after is not None and after[1] == Severity.CRITICAL and "after step 4" in after[2]
    # asked for: quiet; trusted, tainted (rule 1's) or first seen as trusted: not judged
    asked = {**_SEND, "goal": "reply to the e-mail from my colleague"}
    assert send_verdict(sent, 9, "send_email", "", **asked) is None
    assert send_verdict(sent, 9, "send_email", "", **{**_SEND, "tainted": {"x@evil.io"}}) is None
    assert send_verdict([("ok@acme.io", "e-mail address")], 9, "send_email", "", **_SEND) is None


def test_remote_lines() -> None:
    text = "origin\tgit@github.com:acme/dates.git (fetch)\nupstream\thttps://x.io/y\nbad\n"
    assert remote_lines(text) == [("origin", ("acme", "dates")), ("upstream", ("x.io", "y"))]
    assert remote_lines("") == []


def test_clone_kind() -> None:
    url = "https://github.com/acme/dates.git"
    task = {("acme", "dates")}

    def is_repo(o: str, n: str) -> bool:
        return (o, n) in task

    kw: dict[str, Any] = dict(workspace="/w", is_repo=is_repo)
    assert clone_kind([url], first=True, **kw) == ("setup", ("acme", "dates"))
    assert clone_kind([url, "dates"], first=True, **kw) == ("setup", ("acme", "dates"))
    assert clone_kind([url, "/tmp/up/"], first=False, **kw) == ("upstream", "/tmp/up")
    assert clone_kind([url, "/w"], first=False, **kw) is None
    assert clone_kind(["https://github.com/o/other", "/tmp/o"], first=False, **kw) is None
    assert clone_kind([url, "/tmp/up"], first=False, workspace=None, is_repo=is_repo) is None
    assert clone_kind(["not a url"], first=True, **kw) is None


# -- one tokenize pass for a step's terms -------------------------------------------------


def test_tokenize_of_joined_pieces_is_the_pieces_words_in_turn() -> None:
    # step_terms tokenises a step's URL paths and the text around them in one pass,
    # joined by spaces: it relies on this
    rng = random.Random(7)
    alphabet = "aAbZ09_-./:?=& é\u212aSs"
    for _ in range(3_000):
        pieces = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            for _ in range(rng.randint(0, 4))
        ]
        joined = tokenize(" ".join(pieces), drop=CONTENT_DROP)
        assert joined == [w for p in pieces for w in tokenize(p, drop=CONTENT_DROP)]


def test_step_terms_words_keep_the_order_of_urls_and_text() -> None:
    call, _ = Session().tool(
        "bash", {"command": "curl https://api.example.org/v2/weather?city=Oslo | jq .temperature"}
    )
    # the URL's path and query first, then the words of the text around it
    assert step_terms(call).words == ("v2", "weather", "city", "oslo", "curl", "jq", "temperature")


def test_step_terms_words_follow_the_argument_strings_in_turn() -> None:
    call, _ = Session().tool(
        "http", {"note": "checking forecast", "url": "https://api.example.org/weather"}
    )
    words = step_terms(call).words
    assert words.index("forecast") < words.index("weather")


def test_authored_prose_is_judged_by_where_it_goes_unless_a_result_holds_it() -> None:
    authored = ("tulips bulbs spring garden", "notes.md")
    assert authored_words(authored, on_topic=lambda w: False, from_result=lambda w: None) == {
        "note"
    }
    assert authored_words(authored, on_topic=lambda w: True, from_result=lambda w: None) is None
    assert (
        authored_words(authored, on_topic=lambda w: False, from_result=lambda w: (3, False)) is None
    )
    assert authored_words(None, on_topic=lambda w: False, from_result=lambda w: None) is None


def test_query_hits_only_of_an_on_task_query_listing_two_links() -> None:
    assert query_hits(True, 0.0, False, ["a.org/X"], ["b.py"]) == "a.org/x b.py"
    assert query_hits(True, 0.0, False, ["a.org/X"], []) == ""
    assert query_hits(False, 0.0, False, ["a.org/X"], ["b.py"]) == ""
    assert query_hits(True, 0.0, True, ["a.org/X"], ["b.py"]) == ""  # it addressed the agent


def test_issue_and_transfer_urls() -> None:
    assert issue_of("https://api.github.com/repos/acme/dates/issues/12") == (
        "12",
        ("acme", "dates"),
    )
    assert issue_of("https://gitlab.com/acme/dates/-/issues/3") == ("3", ("acme", "dates"))
    assert issue_of("https://github.com/acme/dates/pull/12") is None
    assert transfer_repo("https://github.com/acme/dates.git/info/refs?service=x") == (
        "acme",
        "dates",
    )
    assert transfer_repo("https://github.com/acme/dates/issues/1") is None


def test_result_secrets_read_assignments_only_after_a_sensitive_read() -> None:
    text = "region=eu-west-1\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
    plain, sensitive = (
        result_secrets(text, sensitive_call=False),
        result_secrets(text, sensitive_call=True),
    )
    assert "eu-west-1" not in plain and "eu-west-1" in sensitive
    assert set(plain) <= set(sensitive)


def test_injected_reasons_name_the_address_and_where_it_appeared() -> None:
    reason = tainted_reason(9, "send_email", "x@evil.io", 4, "e-mail address")
    assert reason.startswith("step 9 (send_email) sends to x@evil.io, an e-mail address")
    assert "tool result at step 4" in reason
    span = span_reason(9, "https://evil.io/c", None, "host", 4)
    assert span.startswith(
        "step 9 contacts https://evil.io/c (?), an host that first appeared in the tool "
        "result at step 4"
    )
