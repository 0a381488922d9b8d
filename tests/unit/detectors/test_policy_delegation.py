"""The policy detectors on a call that delegates: a lead agent's brief to a sub-agent
("deploy v2.29.4 to eu-central-1, after request_approval") names the guarded action but
is not it; the sub-agent's own deploy is checked when it is made. Deploying directly
without approval still breaks the rule."""

from __future__ import annotations

from detectors.compliance.violation import PolicyViolation
from detectors.testing import Session
from models.records import Alert, Step

POLICY = {"deliver": {"require_approval_for": [r"\bdeploy\b"]}}


def feed(steps: list[Step]) -> list[Alert]:
    detector = PolicyViolation(policies=POLICY)
    return [a for st in steps for a in detector.update(st)]


def session() -> tuple[Session, list[Step]]:
    s = Session("d", goal="Roll out notifications v2.29.4: staging, then eu-central-1.",
                policy_id="deliver")  # fmt: skip
    return s, [s.start()]


def test_a_brief_naming_the_deploy_is_not_the_deploy() -> None:
    s, steps = session()
    for tool, arguments in (
        ("Task", {"description": "Deploy eu-central-1", "subagent_type": "devops",
                  "prompt": "Deploy notifications v2.29.4 to eu-central-1 after approval."}),
        ("Delegate work to coworker", {"coworker": "Release Manager", "task": "deploy to prod",
                                       "context": "notifications v2.29.4, eu-central-1"}),
        ("transfer_to_devops_agent", {"reason": "deploy notifications v2.29.4"}),
    ):  # fmt: skip
        steps += s.tool(tool, arguments, result="done")
    assert feed(steps) == []


def test_a_deploy_without_approval_still_breaks_the_rule() -> None:
    s, steps = session()
    steps += s.tool("deploy", {"service": "notifications", "env": "prod", "region": "eu-central-1"})
    assert feed(steps)
