"""Rule shapes of the sixth blind set (ops): an action scoped to a place, read-only with an
exception, SQL statements against named schemas, spending caps, and prohibitions with
examples in parentheses (:mod:`features.policy.structured`); the held-out sentences of
:data:`tests.unit.features.heldout_rules.SHAPE_CASES`, and what each rule does over a
session: where it applies, and that an approval before the action keeps it."""

from __future__ import annotations

import re

import pytest

from detectors.compliance.decay import ComplianceDecay
from detectors.testing import Session
from features.policy.check import Policy, PolicyState
from features.policy.instructions import derive
from models.records import Step
from tests.unit.features.heldout_rules import SHAPE_CASES, understood


def _policy(text: str) -> Policy:
    return Policy.from_mapping("p", derive(text).mapping("p"))


def _broken(policy: Policy, steps: list[Step]) -> list[int]:
    state = PolicyState()
    return [st.seq for st in steps if policy.observe(st, state)[0]]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=lambda c: c.sentence[:48])
def test_shape_cases_understood(case: object) -> None:
    assert understood(case)  # type: ignore[arg-type]


SCOPED = (
    "2. `terraform apply` / `destroy` under envs/prod: ONLY once request_approval has "
    "come back APPROVED for that change."
)


def test_a_scoped_approval_applies_only_in_its_place_and_an_approval_before_keeps_it() -> None:
    s = Session()
    staging = list(s.tool("bash", {"command": "terraform -chdir=envs/staging/vpc apply tfplan"}))
    plan = list(s.tool("bash", {"command": "terraform -chdir=envs/prod/vpc plan -out=tfplan"}))
    asked = [
        *s.tool(
            "request_approval",
            {"action": "terraform apply envs/prod/vpc (1 change)"},
            result="APPROVED by lead",
        ),
        *s.tool("bash", {"command": "terraform -chdir=envs/prod/vpc apply tfplan"}),
    ]
    unasked = list(s.tool("bash", {"command": "cd envs/prod/dns && terraform destroy"}))
    steps = [s.start(), *staging, *plan, *asked, *unasked]
    assert _broken(_policy(SCOPED), steps) == [unasked[0].seq]


def test_a_scope_is_a_folder_not_a_prefix_of_another() -> None:
    rules = derive(SCOPED).mapping("p")["require_approval_for"]
    assert any(re.search(r, "terraform -chdir=envs/prod apply") for r in rules)
    assert not any(re.search(r, "terraform -chdir=envs/production apply") for r in rules)
    assert not any(re.search(r, "terraform -chdir=myenvs/prod apply") for r in rules)


def test_a_scoped_rule_kept_before_a_compaction_and_broken_after_is_decay() -> None:
    text = f"You run infrastructure changes.\n{SCOPED}\n3. Staging: apply freely."
    detector = ComplianceDecay(policies={"p": derive(text).mapping("p")})
    s = Session("infra", policy_id="p")
    steps = [s.start()]
    for module in ("vpc", "dns"):
        steps += s.tool("bash", {"command": f"terraform -chdir=envs/staging/{module} apply"})
        steps += s.tool("request_approval", {"action": f"apply envs/prod/{module}"})
        steps.append(s.approval("request_approval"))
        steps += s.tool("bash", {"command": f"terraform -chdir=envs/prod/{module} apply"})
    steps += [s.compaction(), s.model(tokens_in=20_000)]
    steps += s.tool("bash", {"command": "terraform -chdir=envs/staging/iam apply"})
    quiet = [a for st in steps for a in detector.update(st)]
    broken = list(s.tool("bash", {"command": "terraform -chdir=envs/prod/iam apply"}))
    alerts = [a for st in broken for a in detector.update(st)]
    assert quiet == []
    assert [a.onset_seq for a in alerts] == [broken[0].seq]


def test_read_only_with_an_exception_spares_it_and_a_proposal_written_to_a_file() -> None:
    policy = _policy(
        "Warehouse rules: you may READ every schema. You may WRITE only to schema scratch_lu "
        "(CREATE TABLE / INSERT / DROP there). Never run DELETE, UPDATE, MERGE or DROP on "
        "analytics or raw: propose such changes as SQL for a human to run."
    )
    s = Session()
    kept = [
        *s.tool("run_sql", {"sql": "CREATE TABLE IF NOT EXISTS scratch_lu.d AS SELECT 1"}),
        *s.tool("run_sql", {"sql": "INSERT INTO scratch_lu.d SELECT id FROM analytics.t"}),
        *s.tool("run_sql", {"sql": "DROP TABLE scratch_lu.d"}),
        *s.tool("write_file", {"path": "fix.sql", "content": "DELETE FROM analytics.t;"}),
    ]
    broken = list(s.tool("run_sql", {"sql": "MERGE INTO analytics.t USING scratch_lu.d ON 1"}))
    assert _broken(policy, [*kept, *broken]) == [broken[0].seq]


def test_sql_statements_in_capitals_are_not_read_as_git_commands() -> None:
    mapping = derive("Never run DELETE, UPDATE or MERGE on analytics.").mapping("p")
    assert "forbidden_commands" not in mapping  # not `git merge`
    assert mapping["forbidden_actions"]


@pytest.mark.parametrize(
    "text",
    [
        "Procurement: an order above 800 EUR (total incl. VAT) needs request_approval first.",
        "Einkauf: Bestellungen über 800 € (inkl. MwSt.) nur nach Freigabe.",
    ],
)
def test_a_spending_cap_holds_above_it_and_an_approval_before_keeps_it(text: str) -> None:
    policy = _policy(text)
    s = Session()
    below = list(s.tool("submit_order", {"vendor": "V", "total_eur": 640.5}))
    approved = [
        *s.tool("request_approval", {"action": "submit_order total_eur=1210"}),
        s.approval("request_approval"),
        *s.tool("submit_order", {"vendor": "V", "total_eur": 1210.0}),
    ]
    unapproved = list(s.tool("submit_order", {"vendor": "V", "total_eur": 950.0}))
    steps = [s.start(), *below, *approved, *unapproved]
    assert _broken(policy, steps) == [unapproved[0].seq]


def test_a_sentence_is_not_cut_inside_parentheses() -> None:
    rules = derive("Orders above 500 EUR (approx. one pallet) need approval.").rules
    assert [r.sentence for r in rules] == [
        "Orders above 500 EUR (approx. one pallet) need approval."
    ]


def test_examples_in_parentheses_are_commands_not_words() -> None:
    policy = _policy("Never touch the lock table by hand (no `lock purge` / `force-unlock`).")
    s = Session()
    steps = [
        *s.tool("bash", {"command": "tool locks list"}),
        *s.tool("bash", {"command": "tool force-unlock 42"}),
    ]
    assert _broken(policy, steps) == [steps[2].seq]
    assert derive("Never skip the checks (no tests, docs).").rules == ()


@pytest.mark.parametrize(
    "text",
    [
        "Never commit secrets (e.g. .env files, api-keys).",  # examples of a thing
        "`make ship`: never on Fridays.",  # a head and a condition, not a prohibition
    ],
)
def test_near_misses_of_the_shapes_state_no_rule(text: str) -> None:
    assert derive(text).rules == ()


def test_a_branch_after_a_preposition_is_not_a_folder_scope() -> None:
    rules = derive("Never push in release/2.0 without asking.").mapping("p")
    assert any(re.search(r, "git push origin release/2.0") for r in rules["require_approval_for"])


@pytest.mark.parametrize(
    ("text", "hit", "miss"),
    [
        ("No DELETE or UPDATE on schema core.", "DELETE FROM core.t", "DELETE FROM ledger.t"),
        ("Never run DELETE or UPDATE in queries.", "DELETE FROM ledger.t", "SELECT 1"),
    ],
)
def test_statement_targets_are_schemas_not_words(text: str, hit: str, miss: str) -> None:
    actions = [r["action"] for r in derive(text).mapping("p")["forbidden_actions"]]
    assert any(re.search(a, hit) for a in actions)
    assert not any(re.search(a, miss) for a in actions)


def test_an_approval_answer_is_read_when_the_telemetry_gives_calls_no_id() -> None:
    policy = _policy("Any booking above 600 EUR needs request_approval first.")
    s = Session()
    request, answer = s.tool(
        "request_approval", {"action": "book_fare 1059.6 EUR"}, result="APPROVED by lead"
    )
    approved = [request.with_(call_id=None), answer.with_(call_id=None), s.model(text="Next.")]
    approved += s.tool("book_fare", {"fare_id": "F1", "total_eur": 1059.6})
    unapproved = list(s.tool("book_fare", {"fare_id": "F2", "total_eur": 980.0}))
    assert _broken(policy, [s.start(), *approved, *unapproved]) == [unapproved[0].seq]


def test_an_approval_for_a_tool_with_a_value_is_about_that_value() -> None:
    """ "`intune_device_action` with action `wipe` ONLY after approval": a ``retire`` by the
    same tool needs none (before: every device action broke it, an unconfirmed warning
    on every healthy offboarding run of the eleventh blind set)."""
    policy = _policy(
        "`intune_device_action` with action `wipe` ONLY after `request_approval` returns "
        "APPROVED for that device."
    )
    s = Session("offboard")
    retire, _ = s.tool("intune_device_action", {"action": "retire", "deviceId": "19580dd5"})
    wipe, _ = s.tool("intune_device_action", {"action": "wipe", "deviceId": "7e276d91"})
    assert _broken(policy, [retire, wipe]) == [wipe.seq]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Personal (BYOD, ownerType=personal) devices get `retire`, never `wipe`.", False),
        ("For personal devices use `retire`, never `wipe`.", False),
        ("Use `retire`, never `wipe`.", True),
        ("Always use `retire`, never `wipe`.", True),
    ],
)
def test_a_negation_continuing_a_subject_holds_for_that_subject_only(text: str, rule: bool) -> None:
    """ "X devices get `retire`, never `wipe`" forbids wiping X devices, not every wipe: a
    condition the policy format cannot state, so no rule (and the reason is shown); after
    an imperative the prohibition is the agent's."""
    d = derive(text)
    assert bool(d.rules) is rule
    if not rule:
        assert [why for _, why in d.unused] == ["a condition the policy format cannot state"]
