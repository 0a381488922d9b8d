"""Rules read from instructions by structure (features.policy.structured), in several
languages, and the calls they recognise (features.policy.matchers): each rule form is
derived, and a call that does the forbidden thing breaks it while its look-alikes do not."""

from __future__ import annotations

import re

import pytest

from detectors.testing import Session
from features.policy.check import Policy, PolicyState
from features.policy.instructions import derive, to_toml
from features.policy.matchers import command, mail_outside, push_to
from features.policy.structured import time_bound
from models.records import Step


def _policy(text: str) -> Policy:
    return Policy.from_mapping("p", derive(text).mapping("p"))


def _broken(policy: Policy, steps: list[Step]) -> list[int]:
    """The seqs of the steps that broke a rule."""
    state = PolicyState()
    return [st.seq for st in steps if policy.observe(st, state)[0]]


def _bash(s: Session, command_text: str) -> tuple[Step, Step]:
    return s.tool("bash", {"command": command_text})


# -- derivation: one form, several languages ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Git policy: never push to `main`.",
        "Niemals direkt auf `main` pushen.",
        "Nunca hagas push directamente a `main`.",
    ],
)
def test_push_to_a_branch_is_forbidden_by_target(text: str) -> None:
    s = Session()
    steps = [
        *_bash(s, "git push -u origin feat/main-fix"),
        *_bash(s, "git checkout main && git pull && git push origin feat/x"),
        *_bash(s, "git push origin HEAD:main"),
    ]
    assert _broken(_policy(text), steps) == [steps[4].seq]


@pytest.mark.parametrize(
    "text",
    [
        "Ask me for confirmation before every `git push`.",
        "Vor jedem `git push` um Bestätigung bitten.",
        "Always ask me before running any terraform apply or terraform destroy.",
        "Pregúntame siempre antes de ejecutar cualquier terraform apply o terraform destroy.",
        "terraform apply / terraform destroy を実行する前に必ず私に確認してください。",
    ],
)
def test_ask_before_a_command_needs_an_approval(text: str) -> None:
    rules = derive(text).mapping("p")["require_approval_for"]
    hits = [
        bool(re.search(r, c))
        for r in rules
        for c in ("git -C repo push origin x", "terraform -chdir=infra apply -auto-approve")
    ]
    assert any(hits)
    assert not any(re.search(r, "terraform plan -out=tfplan") for r in rules)


@pytest.mark.parametrize(
    "text",
    [
        "Schicke niemals E-Mails an Adressen außerhalb von @acme.de, ohne mich vorher zu fragen.",
        "N'envoie jamais d'e-mail à une adresse extérieure à @acme.de sans me demander d'abord.",
        "@acme.de 以外の社外アドレスにメールを送る前に、必ず私に確認してください。",
    ],
)
def test_mail_outside_a_domain_needs_an_approval(text: str) -> None:
    policy = _policy(text)
    s = Session()
    steps = [
        *s.tool("send_email", {"to": ["team@acme.de"], "body": "hi"}),
        *s.tool("send_email", {"to": ["sales@vendor.es"], "body": "hi"}),
    ]
    assert _broken(policy, steps) == [steps[2].seq]


@pytest.mark.parametrize(
    "text",
    [
        "Never book or pay for anything without my explicit confirmation.",
        "No reserves ni pagues nada sin mi confirmación explícita.",
    ],
)
def test_booking_without_confirmation_breaks_and_an_answered_question_approves(
    text: str,
) -> None:
    policy = _policy(text)
    s = Session()
    asked = [
        s.model(text="Hotel Kamo fits best. Shall I book it?"),
        _user(s, "Sí, resérvalo."),
        *s.tool("book_hotel", {"hotel": "Kamo"}),
    ]
    refused = [s.model(text="And the train?"), _user(s, "No, not yet.")]
    refused += s.tool("book_train", {"train": "JR 412"})
    unasked = list(s.tool("mcp__travel__book_restaurant", {"restaurant": "X"}))
    search = list(s.tool("search_hotels", {"city": "Porto", "payment": "card"}))
    steps = [_user(s, "Plan a trip."), *asked, *refused, *unasked, *search]
    assert _broken(policy, steps) == [refused[2].seq, unasked[0].seq]


def _user(s: Session, message: str) -> Step:
    step = s.model()
    return step.with_(detail={"user_message": message})


@pytest.mark.parametrize(
    "text",
    [
        "Only modify files under `services/payments/`. Do not edit `infra/` or `.github/`.",
        "`services/payments/` 配下のファイルのみ変更してください。"
        "`infra/`、`.github/`は編集しないこと。",
    ],
)
def test_only_paths_scope_writes(text: str) -> None:
    mapping = derive(text).mapping("p")
    assert mapping["allowed_write_paths"] == ["services/payments/**"]
    assert set(mapping["forbidden_write_paths"]) == {"infra/**", ".github/**"}
    s = Session()
    steps = [
        *s.tool("write_file", {"path": "services/payments/api.py", "content": "x"}),
        *s.tool("write_file", {"path": "/tmp/scratch.txt", "content": "x"}),
        *s.tool("write_file", {"path": "tests/test_api.py", "content": "x"}),
    ]
    assert _broken(_policy(text), steps) == [steps[4].seq]


@pytest.mark.parametrize(
    "text",
    [
        "You may only modify resources in namespace staging. Namespaces prod and payments are "
        "READ-ONLY for you: get/describe/logs/top are fine; never apply, delete, scale, patch, "
        "set image, rollout restart or exec there.",
        "你只能修改 staging 命名空间中的资源。prod 和 payments 命名空间对你是只读的：可以 "
        "get/describe/logs/top，但绝不能在那里 apply、delete、scale、patch、"
        "set image、rollout restart 或 exec。",
    ],
)
def test_namespace_scope(text: str) -> None:
    s = Session()
    steps = [
        *_bash(s, "kubectl -n prod get pods"),
        *_bash(s, "kubectl -n staging rollout restart deploy/api"),
        *_bash(s, "kubectl -n prod rollout restart deploy/api"),
    ]
    assert _broken(_policy(text), steps) == [steps[4].seq]


@pytest.mark.parametrize(
    ("text", "until"),
    [
        (
            "CHANGE FREEZE: no production deploys (helm upgrade/install, kubectl apply) "
            "against namespace production before 18:00 UTC today. Staging is fine.",
            "18:00",
        ),
        (
            "ÄNDERUNGSSTOPP: Bis heute 18:00 UTC keine Deployments in Produktion "
            "(helm upgrade/install, kubectl apply im Namespace production).",
            "18:00",
        ),
    ],
)
def test_freeze_holds_until_its_time(text: str, until: str) -> None:
    mapping = derive(text).mapping("p")
    assert {t["until"] for t in mapping["forbidden_actions"]} == {until}
    policy = _policy(text)
    s = Session()  # T0 is a moment of 2024-01-01, before 18:00 UTC
    deploy = "helm upgrade api ./chart -n production"
    early = [*_bash(s, "helm diff upgrade api ./chart -n production"), *_bash(s, deploy)]
    s.ts += 20 * 3600 * 10**9  # the next day's early hours: the freeze is over
    late = list(_bash(s, deploy))
    assert _broken(policy, early + late) == [early[2].seq]


def test_database_freeze_forbids_writes_not_files_describing_them() -> None:
    text = (
        "CODE FREEZE until 2099-01-21 09:00 UTC. Do NOT run migrations and do NOT modify data "
        "in the production database. Read-only SELECT queries are fine."
    )
    policy = _policy(text)
    s = Session()
    steps = [
        *_bash(s, 'psql "$DATABASE_URL" -c "SELECT count(*) FROM companies"'),
        *s.tool("apply_patch", {"input": "*** Add File: m.sql\n+DELETE FROM companies;"}),
        *s.tool("write_file", {"path": "db/m.sql", "content": "DROP TABLE x;"}),
        *s.tool("mcp__postgres__query", {"sql": "DROP TABLE company_aliases;"}),
        *_bash(s, "RAILS_ENV=production bin/rails db:migrate"),
    ]
    assert _broken(policy, steps) == [steps[6].seq, steps[8].seq]


@pytest.mark.parametrize(
    "text",
    [
        "Never read raw.customers (e-mails, phones, addresses).",
        "Nunca leas raw.customers (e-mails, teléfonos, direcciones).",
    ],
)
def test_a_forbidden_table(text: str) -> None:
    s = Session()
    steps = [
        *s.tool("postgres__query", {"sql": "SELECT * FROM analytics.customers_masked"}),
        *s.tool("postgres__query", {"sql": "SELECT email FROM raw.customers"}),
    ]
    assert _broken(_policy(text), steps) == [steps[2].seq]


def test_only_one_account_of_a_typed_identifier() -> None:
    text = "Utilise uniquement le compte de staging (acct_1StgftN8u2Zrhj) ; jamais la production."
    s = Session()
    steps = [
        *s.tool("stripe__list_charges", {"stripe_account": "acct_1StgftN8u2Zrhj"}),
        *s.tool("stripe__list_charges", {"stripe_account": "acct_1Live7Ij54sM06"}),
    ]
    assert _broken(_policy(text), steps) == [steps[2].seq]


@pytest.mark.parametrize(
    "text",
    [
        "Staging is fine.",
        "Read-only SELECT queries are fine.",
        "The production database is on port 5432.",
        "If the build fails, do not push.",
    ],
)
def test_sentences_that_state_no_rule(text: str) -> None:
    assert derive(text).rules == ()


def test_derived_tables_are_shown_for_review() -> None:
    toml = to_toml(derive("Niemals direkt auf `main` pushen."), "mine")
    assert "[[forbidden_actions]]" in toml
    assert '# "Niemals direkt auf `main` pushen."' in toml


# -- matchers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        ("git push origin main", True),
        ("git push origin HEAD:main", True),
        ("git push origin refs/heads/main", True),
        ("git -C repo push --force origin main", True),
        ("git push origin mainline", False),
        ("git push origin feat/main", False),
        ("git log main && git push origin feat", False),
    ],
)
def test_push_to(cmd: str, expected: bool) -> None:
    assert bool(re.search(push_to("main"), cmd)) is expected


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        ("kubectl -n prod set image deploy/x a=b", True),
        ("kubectl set image deploy/x a=b --namespace=prod", True),
        ("kubectl --context c -n prod rollout restart deploy/x", False),
        ("kubectl -n staging set image deploy/x a=b", False),
        ("kubectl -n prod get deploy/x -o yaml", False),
    ],
)
def test_command_with_namespace(cmd: str, expected: bool) -> None:
    assert bool(re.search(command("kubectl", ["set image"], namespaces=["prod"]), cmd)) is expected


def test_mail_outside_reads_the_recipient_of_a_mail_tool() -> None:
    p = re.compile(mail_outside("acme.de"))
    assert p.search("gmail__send_email body x@mail.acme.de y@vendor.es")
    assert not p.search("gmail__send_email body x@mail.acme.de")
    assert not p.search("web_fetch https://vendor.es/contact sales@vendor.es")


@pytest.mark.parametrize(
    ("line", "until"),
    [
        ("CODE FREEZE until 2026-01-21 09:00 UTC.", "2026-01-21T09:00"),
        ("nada de despliegues antes de las 18:00 UTC de hoy", "18:00"),
        ("deploys are allowed after 18:00 UTC", None),
        ("no deploys on Friday", None),
    ],
)
def test_time_bound(line: str, until: str | None) -> None:
    assert time_bound(line) == until


# -- tools a rule names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Never call social_publish or social_schedule: a human editor publishes.",
        "Rufe niemals social_publish oder social_schedule auf.",
        "Nunca llames a social_publish ni a social_schedule.",
    ],
)
def test_a_prohibition_naming_tools_forbids_those_tools(text: str) -> None:
    policy = _policy(text)
    s = Session("t")
    steps = [s.start()]
    steps += s.tool("social_create_draft", {"channel": "x", "text": "Autumn"})
    steps += s.tool("mcp__social__social_publish", {"channel": "x", "text": "Autumn"})
    steps += s.tool("social_publish_preview", {"channel": "x"})
    steps += s.tool("social_schedule", {"channel": "x", "at": "09:00"})
    assert _broken(policy, steps) == [steps[3].seq, steps[7].seq]


def test_a_tool_after_without_or_unless_is_not_forbidden() -> None:
    policy = _policy("Never delete a customer without calling crm_lookup first.")
    s = Session("t")
    steps = [s.start(), *s.tool("crm_lookup", {"id": "c1"})]
    assert _broken(policy, steps) == []


def test_an_only_clause_naming_tools_allows_only_them_within_their_family() -> None:
    policy = _policy("RULE: you create DRAFTS only (cms_create_draft / social_create_draft).")
    s = Session("t")
    steps = [s.start()]
    steps += s.tool("social_create_draft", {"channel": "x", "text": "Autumn"})
    steps += s.tool("cms_create_draft", {"title": "Autumn"})
    steps += s.tool("asset_search", {"query": "autumn"})
    steps += s.tool("social_publish", {"channel": "x", "text": "Autumn"})
    assert _broken(policy, steps) == [steps[7].seq]


def test_a_negation_elsewhere_in_the_clause_does_not_forbid_the_tool_it_asks_for() -> None:
    """smolagents' own prompt: the "no" is about a tool call being needed."""
    policy = _policy("If no tool call is needed, use final_answer tool to return your answer.")
    s = Session("t")
    steps = [s.start(), *s.tool("final_answer", {"answer": "It is sunny in Lisbon."})]
    assert _broken(policy, steps) == []


@pytest.mark.parametrize(
    "text",
    [
        "Never delete or overwrite anything; move files to the archive instead.",
        "削除や上書きは絶対にしないこと。",
        "Nunca borres ni sobrescribas archivos.",
        "Niemals Dateien löschen oder überschreiben.",
    ],
)
def test_a_prohibition_of_deleting_with_no_other_object_forbids_deleting_files(text: str) -> None:
    policy = _policy(text)
    s = Session("t")
    steps = [s.start()]
    steps += _bash(s, "mv ~/Documents/old_draft.docx ~/Archive/cleanup-2025/")
    steps += _bash(s, "rm -f ~/Documents/copy_of_report.docx")
    assert _broken(policy, steps) == [steps[3].seq]


def test_deleting_another_object_is_not_a_file_rule() -> None:
    policy = _policy("Do not delete the comments in the code.")
    s = Session("t")
    assert _broken(policy, [s.start(), *_bash(s, "rm -rf build/")]) == []


# -- verb-final prohibitions, names glued to a particle, times with seconds ------------------


@pytest.mark.parametrize(
    "text",
    [
        "submit_for_review や production への昇格は禁止。",  # ja: the negation closes
        "submit_for_reviewを実行しないでください。",  # ja: a particle glued to the name
        "submit_for_review는 사용하지 마세요.",  # ko
        "Calling submit_for_review is not allowed.",  # en, the negation after the name
    ],
)
def test_a_negation_that_closes_the_clause_forbids_the_tool_before_it(text: str) -> None:
    s = Session("v")
    steps = [
        *s.tool("submit_for_review", {"app": "4.20.0"}),
        *s.tool("upload_build", {"track": "internal"}),
    ]
    assert _broken(_policy(text), steps) == [steps[0].seq]


def test_a_tool_before_a_later_negation_in_another_clause_is_not_forbidden() -> None:
    assert not derive("Call final_answer when you are done, do not loop.").rules


def test_a_deadline_with_seconds_is_that_instant() -> None:
    assert time_bound("Release freeze until 2025-10-29T07:21:59Z (UTC).") == "2025-10-29T07:21:59"
    assert time_bound("リリースフリーズ: 2025-10-29T07:21:59Z (UTC) までは internal のみ") == (
        "2025-10-29T07:21:59"
    )


@pytest.mark.parametrize(
    "text",
    [
        "TREASURY POLICY: wallet__transfer only for amounts <= 250 USDC. Above that: "
        "safe__propose_tx (2 of 3 signers).",
        "POLICY TESORERIA: wallet__transfer solo per importi <= 250 USDC. Oltre: "
        "safe__propose_tx (2 firmatari su 3), mai un trasferimento diretto.",
        "財務ポリシー：wallet__transfer は 250 USDC 以下のみ (≤ 250)。"
        "超える場合は safe__propose_tx。",
    ],
)
def test_a_tool_capped_by_a_comparison_sign_is_forbidden_above_it(text: str) -> None:
    policy = _policy(text)
    s = Session("caps")
    small, _ = s.tool("wallet__transfer", {"amount": 203.04, "to": "0x89"})
    big, _ = s.tool("mcp__wallet__transfer", {"amount": 1323.56, "to": "0x02"})
    proposal, _ = s.tool("safe__propose_tx", {"amount": 703.69, "to": "0x7c"})
    assert _broken(policy, [small, big, proposal]) == [big.seq]


def test_a_comparison_without_one_named_tool_states_no_cap() -> None:
    assert "forbidden_actions" not in to_toml(derive("Keep retries <= 3 per job."), "p")


@pytest.mark.parametrize(
    "text",
    [
        # Portuguese "no" is "in the": no prohibition, so no rule about migrations
        "Mantém o Discord informado no dia da migração: repassa os estados para #announcements.",
        # a tool consulted is no person asked
        "No máximo 3 mensagens por hora (consulta ratelimit__ledger antes de enviar).",
        "Consult check_quota before every upload.",
        # a full-width comma ends the clause: the direct transfer is forbidden, not the tool
        "更大金额必须用 safe__propose_tx（3 人中 2 人签名），不得直接转账。",
    ],
)
def test_sentences_that_state_no_rule_about_their_tools_derive_none(text: str) -> None:
    assert derive(text).mapping("p").get("forbidden_actions", []) == []
    assert derive(text).mapping("p").get("require_approval_for", []) == []


def test_a_spanish_no_and_a_person_consulted_still_state_rules() -> None:
    assert derive("No modifiques la base de datos de producción.").mapping("p")
    asks = derive("Consulta al responsable antes de enviar cualquier correo.").mapping("p")
    assert asks.get("require_approval_for")


@pytest.mark.parametrize(
    "text",
    [
        "brand_check + request_approval before any publish.",
        "Run brand_check and request_approval before publishing a post.",
        "Ejecuta brand_check y request_approval antes de publicar.",
    ],
)
def test_a_check_named_ahead_of_before_is_a_step_first_not_the_action_approved(text: str) -> None:
    """The tools named with the asking, ahead of "before", are done first; publishing is
    what waits for the approval - a second brand_check after a failed one asks nothing."""
    s = Session("t")
    check, _ = s.tool("brand_check", {"caption": "Softer skin, night after night."})
    again, _ = s.tool("brand_check", {"caption": "Eight nights in."})
    publish, _ = s.tool("social__publish_post", {"caption": "Eight nights in.", "post": "p4"})
    assert _broken(_policy(text), [check, again, publish]) == [publish.seq]
