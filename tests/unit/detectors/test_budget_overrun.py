"""BudgetOverrun on hand-built sessions: each resource against the session's budget and
the constructor defaults, warn at the fraction, critical at the limit, once each."""

from __future__ import annotations

import pytest

from detectors.budget_overrun import BudgetOverrun
from detectors.testing import Session
from models.records import Action, Alert, Severity, Step


def feed(steps: list[Step], **params: object) -> list[Alert]:
    detector = BudgetOverrun(**params)  # type: ignore[arg-type]
    return [alert for step in steps for alert in detector.update(step)]


def test_tokens_warn_at_80_percent_and_kill_at_the_budget_once_each() -> None:
    s = Session("tok", budget={"tokens": 10_000})
    steps = [s.start(), *(s.model(tokens_in=900, tokens_out=100) for _ in range(15))]
    alerts = feed(steps)
    assert [(a.severity, a.action, a.raised_seq, a.onset_seq) for a in alerts] == [
        (Severity.WARN, Action.NOTIFY, 8, 8),  # 8,000 tokens
        (Severity.CRITICAL, Action.KILL, 10, 10),  # 10,000 tokens
    ]
    assert alerts[0].reason == "tokens at 80% of budget: 8,000 of 10,000 tokens"
    assert alerts[1].score == 1.0


def test_cost_tool_calls_and_wall_time() -> None:
    s = Session("all", budget={"cost_usd": 1.0, "tool_calls": 10, "wall_seconds": 30})
    steps = [s.start()]
    for _ in range(4):  # 6 s an iteration: 1 model, 1 call, 4 running
        steps += [s.model(cost=0.3), *s.tool("bash", {"command": "make"}, seconds=4)]
    alerts = feed(steps)
    reasons = [(str(a.severity), part) for a in alerts for part in a.reason.split("; ")]
    assert ("warn", "cost at 90% of budget: $0.90 of $1.00") in reasons
    assert ("critical", "cost at 120% of budget: $1.20 of $1.00") in reasons
    assert ("warn", "wall time at 80% of budget: 24 of 30 seconds") in reasons
    assert not any(part.startswith("tool calls") for _, part in reasons)  # 4 of 10


def test_wall_time_is_event_time_since_the_start() -> None:
    s = Session("wall")
    steps = [s.start(), *s.tool("bash", {"command": "sleep 100"}, seconds=100)]
    alerts = feed(steps, wall_seconds=90)
    assert [a.severity for a in alerts] == [Severity.WARN, Severity.CRITICAL]
    assert alerts[0].raised_seq == alerts[1].raised_seq == steps[-1].seq


def test_resources_crossing_on_one_step_share_one_alert() -> None:
    s = Session("both", budget={"tokens": 1_000, "cost_usd": 0.1})
    alerts = feed([s.start(), s.model(tokens_in=850, tokens_out=0, cost=0.085)])
    assert len(alerts) == 1
    assert alerts[0].reason.startswith("tokens at 85%") and "; cost at 85%" in alerts[0].reason


def test_constructor_defaults_apply_when_the_session_sets_none_and_the_session_wins() -> None:
    s = Session("defaults", budget={"tool_calls": 100})
    steps = [s.start()]
    for i in range(5):
        steps += s.tool("read_file", {"path": f"f{i}.py"})
    assert feed(steps, tool_calls=4) == []  # the session's 100 wins over the default 4
    bare = Session("bare")
    steps = [bare.start(), *(st for i in range(5) for st in bare.tool("ls", {"path": f"d{i}"}))]
    assert [a.severity for a in feed(steps, tool_calls=4)] == [Severity.WARN, Severity.CRITICAL]


def test_no_budget_no_alerts_and_bad_budget_values_are_ignored() -> None:
    s = Session("none", budget={"tokens": "lots", "cost_usd": -5, "tool_calls": None})
    steps = [s.start(), *(s.model(tokens_in=10**6) for _ in range(5))]
    assert feed(steps) == []


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("warn_fraction", 0.0),
        ("warn_fraction", 1.0),
        ("tokens", 0),
        ("cost_usd", -1.0),
        ("tool_calls", -3),
        ("wall_seconds", float("nan")),
    ],
)
def test_bad_parameters_name_themselves(param: str, value: float) -> None:
    with pytest.raises(ValueError, match=param):
        BudgetOverrun(**{param: value})  # type: ignore[arg-type]
