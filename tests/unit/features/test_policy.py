"""Checking steps against a policy (features/policy/check.py): what each rule catches and lets
through, and that the speed-ups (joined screen, memos) change nothing."""

from __future__ import annotations

import pickle
import re
import tomllib

import pytest

from detectors.testing import Session
from features.calls.step_features import analysed_view, features_of
from features.policy.check import Policy, PolicyState
from features.policy.format import joined_screen
from models.records import Step
from tests.support.paths import ROOT

POLICIES = ROOT / "fixtures" / "policies"


def load(name: str) -> Policy:
    with (POLICIES / f"{name}.toml").open("rb") as f:
        return Policy.from_mapping(name, tomllib.load(f))


def run(policy: Policy, steps: list[Step]) -> list[tuple[int, str, str]]:
    state = PolicyState()
    return [(v.step_seq, v.kind, v.rule) for s in steps for v in policy.check(s, state)]


def test_approval_needed_since_the_last_guarded_action() -> None:
    p = load("coding-strict-v1")
    s = Session(policy_id="coding-strict-v1")
    steps = [s.start()]
    ask, _ = s.tool("request_approval", {"action": "git push origin fix", "reason": "review"})
    steps += [
        ask,
        s.approval("request_approval"),
        *s.tool("bash", {"command": "git push origin fix"}),
    ]
    second, _ = s.tool("bash", {"command": "git push origin fix"})
    steps.append(second)
    assert run(p, steps) == [
        (second.seq, "require_approval_for", "require_approval_for `git\\s+push`")
    ]


def test_denied_approval_does_not_count() -> None:
    p = Policy.from_mapping("p", {"require_approval_for": [r"\bdeploy\b"]})
    s = Session()
    call, _ = s.tool("run_command", {"cmd": "make deploy"})
    assert run(p, [s.approval(approved=False), call]) == [
        (call.seq, "require_approval_for", "require_approval_for `\\bdeploy\\b`")
    ]


def test_approval_request_naming_another_rule_does_not_open_this_one() -> None:
    p = Policy.from_mapping("p", {"require_approval_for": [r"git\s+push", r"\bdeploy\b"]})
    s = Session()
    ask, _ = s.tool("ask_human", {"question": "May I run `make deploy`?"})
    push, _ = s.tool("bash", {"command": "git push"})
    assert [k for _, k, _ in run(p, [ask, s.approval("ask_human"), push])] == [
        "require_approval_for"
    ]


def test_tests_must_pass_after_the_last_edit_before_commit() -> None:
    p = load("coding-default-v2")
    s = Session()
    edit = s.tool("edit_file", {"path": "src/a.py", "old_text": "x", "new_text": "y"})
    passed = s.tool("bash", {"command": "pytest -q"})
    ok_commit, _ = s.tool("bash", {"command": "git commit -am fix"})
    edit2 = s.tool("str_replace", {"file_path": "/w/src/a.py", "old_str": "y", "new_str": "z"})
    bad_commit, _ = s.tool("bash", {"command": "git add -A && git commit -m more"})
    failed = s.tool("bash", {"command": "pytest -q"}, ok=False)
    bad_commit2, _ = s.tool("bash", {"command": "git commit -am again"})
    steps = [*edit, *passed, ok_commit, *edit2, bad_commit, *failed, bad_commit2]
    assert [(seq, kind) for seq, kind, _ in run(p, steps)] == [
        (bad_commit.seq, "require_before"),
        (bad_commit2.seq, "require_before"),
    ]


def test_a_test_run_cancelled_before_it_ran_is_no_run() -> None:
    p = load("coding-default-v2")
    s = Session()
    edit = s.tool("edit_file", {"path": "src/a.py", "old_text": "x", "new_text": "y"})
    passed = s.tool("bash", {"command": "pytest -q"})
    edit2 = s.tool("edit_file", {"path": "src/a.py", "old_text": "y", "new_text": "z"})
    # the tests after the second edit, cancelled because a sibling call failed
    cancelled = s.batch(
        [("bash", {"command": "pytest -q"}), ("bash", {"command": "ls x"})], failed=1
    )
    commit, _ = s.tool("bash", {"command": "git commit -am fix"})
    steps = [*edit, *passed, *edit2, *cancelled, commit]
    assert [(seq, kind) for seq, kind, _ in run(p, steps)] == [(commit.seq, "require_before")]
    # before the edit, the passing run stands: the cancelled one replaced nothing
    cancelled = s.batch(
        [("bash", {"command": "pytest -q"}), ("bash", {"command": "ls x"})], failed=1
    )
    commit, _ = s.tool("bash", {"command": "git commit -am fix"})
    assert run(p, [*edit, *passed, *cancelled, commit]) == []


def test_commit_without_any_edit_holds_vacuously() -> None:
    p = load("coding-default-v2")
    s = Session()
    assert run(p, list(s.tool("bash", {"command": "git commit --allow-empty -m x"}))) == []


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("write_file", {"path": ".github/workflows/ci.yml", "content": "x"}, True),
        (
            "create_file",
            {"file_path": "/workspace/r/.github/workflows/ci.yml", "file_text": "x"},
            True,
        ),
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Add File: Cargo.lock\n+x\n*** End Patch"},
            True,
        ),
        ("bash", {"command": "echo x > package-lock.json"}, True),
        ("shell", {"command": ["bash", "-lc", "sed -i 's/a/b/' go.sum"]}, True),
        (
            "bash",
            {"command": "npm install && cat package-lock.json | tee out/package-lock.json"},
            True,
        ),
        ("python_interpreter", {"code": "open('.env', 'w').write('K=1')"}, True),
        ("read_file", {"path": ".github/workflows/ci.yml"}, False),
        ("bash", {"command": "cat go.sum 2>&1 | head"}, False),
        ("str_replace_based_edit_tool", {"command": "view", "path": "Cargo.lock"}, False),
        ("write_file", {"path": "docs/ci.md", "content": "edit .github/workflows/ci.yml"}, False),
    ],
)
def test_forbidden_write_paths(tool: str, args: dict, expected: bool) -> None:
    p = load("coding-strict-v1")
    call, _ = Session().tool(tool, args)
    kinds = [k for _, k, _ in run(p, [call])]
    assert ("forbidden_write_paths" in kinds) is expected


def test_absolute_and_home_globs() -> None:
    p = Policy.from_mapping("p", {"forbidden_write_paths": ["/etc/**", "~/.ssh/**"]})
    s = Session()
    hits = [
        s.tool("bash", {"command": "echo x >> /root/.ssh/authorized_keys"})[0],
        s.tool("write_file", {"path": "/etc/hosts", "content": ""})[0],
    ]
    miss = s.tool("write_file", {"path": "src/etc/hosts", "content": ""})[0]
    assert [seq for seq, _, _ in run(p, [*hits, miss])] == [h.seq for h in hits]


def test_forbidden_commands_not_in_written_content() -> None:
    p = load("coding-default-v2")
    s = Session()
    doc, _ = s.tool("write_file", {"path": "CONTRIBUTING.md", "content": "never git push --force"})
    force, _ = s.tool("bash", {"command": "git push --force origin main"})
    kinds = [(seq, k) for seq, k, _ in run(p, [doc, force])]
    assert (doc.seq, "forbidden_commands") not in kinds
    assert (force.seq, "forbidden_commands") in kinds


def test_forbidden_tools_are_globs() -> None:
    p = Policy.from_mapping("p", {"forbidden_tools": ["delete_*"]})
    call, _ = Session().tool("Delete_Repo", {"name": "x"})
    assert run(p, [call]) == [(call.seq, "forbidden_tools", "forbidden_tools `delete_*`")]


def test_egress_allowed_denied_loopback_and_mcp() -> None:
    p = Policy.from_mapping(
        "p",
        {"allowed_egress_hosts": ["*.example.com", "pypi.org"], "denied_egress_hosts": ["bad.io"]},
    )
    s = Session()
    steps = [
        s.egress("https://api.example.com/x"),
        s.egress("https://pypi.org/simple/"),
        s.egress("http://localhost:8000/"),
        s.egress("https://cdn.bad.io/x"),
        s.egress("https://evil.org/x"),
    ]
    mcp = s.egress("https://10.0.0.5/", method="tools/call").with_(
        detail={"mcp_method": "tools/call"}
    )
    got = run(p, [*steps, mcp])
    assert [(seq, rule) for seq, _, rule in got] == [
        (steps[3].seq, "denied_egress_hosts `bad.io`"),
        (steps[4].seq, "allowed_egress_hosts"),
    ]


def test_egress_named_in_a_call_is_not_counted_twice_by_its_span() -> None:
    p = Policy.from_mapping("p", {"allowed_egress_hosts": ["pypi.org"]})
    s = Session()
    call, _ = s.tool("bash", {"command": "curl -s https://evil.org/x"})
    span = s.egress("https://evil.org/x", parent=call)
    assert [seq for seq, _, _ in run(p, [call, span])] == [call.seq]


def test_budget_reported_once() -> None:
    p = Policy.from_mapping("p", {"budget": {"tool_calls": 2}})
    s = Session()
    steps = [s.start()]
    for _ in range(4):
        steps += s.tool("bash", {"command": "ls"})
    assert [(k, r) for _, k, r in run(p, steps)] == [("budget", "budget.tool_calls")]


def test_state_is_small_and_picklable() -> None:
    p = load("coding-strict-v1")
    s = Session(policy_id="coding-strict-v1")
    state = PolicyState()
    for i in range(3_000):
        for st in s.tool("bash", {"command": f"pytest -q tests/t{i}.py"}):
            p.check(st, state)
    assert len(pickle.dumps(state)) < 2_000
    assert pickle.loads(pickle.dumps(p)).policy_id == "coding-strict-v1"


# -- the speed-ups must not change what is found ------------------------------------


def test_text_screen_joins_only_patterns_that_mean_the_same_joined() -> None:
    assert joined_screen([re.compile(r"git\s+push\s+(-f|--force)")]) is not None
    for unjoinable in (
        [r"(\w+) \1"],
        [r"(?P<w>x)(?P=w)"],
        [r"(?i)sudo"],
        [r"(?P<a>x)", r"(?P<a>y)"],
    ):
        assert joined_screen([re.compile(p) for p in unjoinable]) is None
    # unscreened rules are still checked one by one
    p = Policy.from_mapping("p", {"forbidden_commands": [r"\b(\w+) \1\b", r"(?i)SUDO"]})
    s = Session()
    steps = [s.start()]
    for command in ("echo hi", "rm rm x", "sudo ls"):
        steps += s.tool("bash", {"command": command})
    assert [r for _, _, r in run(p, steps)] == [
        "forbidden_commands `\\b(\\w+) \\1\\b`",
        "forbidden_commands `(?i)SUDO`",
    ]


def test_policy_memos_are_not_state() -> None:
    p = load("coding-strict-v1")
    s = Session(policy_id="coding-strict-v1")
    steps = [s.start()]
    for _ in range(2):
        steps += s.tool("bash", {"command": "git push origin main"})
        steps += s.tool("web_fetch", {"url": "https://pastebin.com/raw/x"})
    first, again = run(p, steps), run(p, steps)  # again: every call from the memo
    assert first == again and len(first) > 2
    assert len(p._hosts) > 0
    copy = pickle.loads(pickle.dumps(p))
    assert copy == p == load("coding-strict-v1") and len(copy._hosts) == 0
    assert run(copy, steps) == first


def test_a_call_is_judged_once_per_step_and_policy() -> None:
    # both policy detectors check a call against one shared policy: the second reads what
    # the first worked out, kept on the step's features; another policy works it out anew
    p, other = load("coding-strict-v1"), load("coding-strict-v1")
    call, _ = Session(policy_id="coding-strict-v1").tool("bash", {"command": "git push"})
    view = analysed_view(call)
    rules = p._rules_of(view, "/w")
    assert p._rules_of(view, "/w") is rules
    assert other._rules_of(view, "/w") is not rules
    assert other._rules_of(view, "/w") == rules
    assert p._rules_of(view, "/elsewhere") is not rules
    assert rules.view is features_of(view).view_for(p.approval_tools)
