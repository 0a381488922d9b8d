"""The shapes people write rules in (issue 26), read by features.policy.structured and
judged by what a call does (features.policy.matchers): numbered clauses, a prohibition
that waits for a person's say-so, "X requires approval: call T before U", an amount limit,
a read-only table, "only to X", quoted button labels, sending mail (not drafting it) —
each in several languages, each with a call that breaks it and look-alikes that do not.
The sentences are written here, not taken from any generator."""

from __future__ import annotations

from typing import Any

import pytest

from detectors.testing import Session
from features.policy.check import Policy, PolicyState
from features.policy.instructions import derive


def _flagged(text: str, tool: str, args: dict[str, Any], *, approved: bool = False) -> bool:
    """Whether the policy derived from ``text`` reports the call (alone in a session,
    after an approval when ``approved``)."""
    policy = Policy.from_mapping("p", derive(text).mapping("p"))
    s, state = Session(), PolicyState()
    steps = [s.start()]
    if approved:
        steps += s.tool("request_approval", {"question": f"May I run {tool}?"}, result="Approved")
    steps += s.tool(tool, args)
    return any(policy.check(st, state) for st in steps)


@pytest.mark.parametrize(
    "text",
    [
        "Never `git push` unless I say so.",
        "Do not push unless the user asks you to.",
        "Niemals `git push` ausführen, es sei denn, der Benutzer verlangt es ausdrücklich.",
        "Nunca hagas `git push` sin autorización explícita del usuario.",
        "Ne fais jamais `git push` sans la confirmation de l'utilisateur.",
        "Nunca faça `git push` sem a confirmação do usuário.",
        "ユーザーの確認なしに`git push`しないこと。",
        "未经用户确认，不要执行 `git push`。",
    ],
)
def test_a_prohibition_waiting_for_a_persons_say_so_is_an_approval(text: str) -> None:
    keys = {r.key for r in derive(text).rules}
    assert keys == {"require_approval_for"}, derive(text)
    assert _flagged(text, "bash", {"command": "git push origin feat"})
    assert not _flagged(text, "bash", {"command": "git push origin feat"}, approved=True)
    assert not _flagged(text, "bash", {"command": "git status"})


@pytest.mark.parametrize(
    "text",
    [
        "Mail rules: do not send any message yourself unless the user has confirmed that draft.",
        "Niemals selbst eine E-Mail senden, es sei denn, der Benutzer hat zugestimmt.",
        "Nunca envíes un correo sin la confirmación explícita del usuario.",
        "N'envoie jamais de courriel sans la confirmation de l'utilisateur.",
        "ユーザーの確認なしにメールを送信しないこと。",
        "未经用户确认，不要发送邮件。",
    ],
)
def test_sending_mail_needs_the_approval_drafting_does_not(text: str) -> None:
    mail = {"to": ["k.ito@example.jp"], "subject": "Re: quote", "body": "Agreed."}
    assert _flagged(text, "send_email", mail)
    assert _flagged(text, "outlook_send_message", mail)
    assert not _flagged(text, "create_draft", mail)
    assert not _flagged(text, "gmail_create_draft", mail)
    assert not _flagged(text, "read_email", {"id": "m-1"})


@pytest.mark.parametrize(
    "text",
    [
        "Credit policy: (1) credits up to 20 USD are fine; (2) any credit over 20 USD requires "
        "approval: call ask_supervisor and wait for a yes before grant_credit; (3) never credit "
        "more than the invoice.",
        "Gutschriften über 20 USD erfordern eine Freigabe vor grant_credit.",
        "Los créditos de más de 20 USD requieren aprobación antes de grant_credit.",
        "Credits above $20 need a supervisor's approval before you grant them.",
    ],
)
def test_an_amount_limit_bounds_the_approval_rule(text: str) -> None:
    assert _flagged(text, "billing__grant_credit", {"account": "a-9", "amount": 35.5})
    assert _flagged(text, "billing__grant_credit", {"account": "a-9", "amount": "120.00 USD"})
    assert not _flagged(text, "billing__grant_credit", {"account": "a-9", "amount": 12})
    assert not _flagged(text, "billing__grant_credit", {"account": "a-9", "amount": 20})
    assert not _flagged(text, "billing__get_invoice", {"account": "a-9", "total": 300})
    assert not _flagged(
        text, "billing__grant_credit", {"account": "a-9", "amount": 35.5}, approved=True
    )


def test_numbered_clauses_in_one_line_are_read_one_by_one() -> None:
    d = derive(
        "Payouts: (1) payouts up to 10 EUR are automatic; (2) never pay out to new IBANs; "
        "(3) any payout above 10 EUR requires approval before send_payout."
    )
    sentences = [r.sentence for r in d.rules]
    assert sentences and all(s.startswith("any payout above 10 EUR") for s in sentences), d


@pytest.mark.parametrize(
    "text",
    [
        "FREEZE until further notice: the billing_core schema is READ-ONLY for agents.",
        "Das Schema billing_core ist schreibgeschützt.",
        "El esquema billing_core es de solo lectura.",
        "No INSERT, UPDATE or DELETE on billing_core tables.",
    ],
)
def test_a_read_only_table_forbids_sql_writes_to_it_not_reads(text: str) -> None:
    for query in (
        "DELETE FROM billing_core.invoices WHERE id = 4",
        "UPDATE billing_core.invoices SET paid = true",
        "INSERT INTO billing_core.invoices VALUES (1)",
    ):
        assert _flagged(text, "run_sql", {"query": query}), query
    for query in (
        "SELECT * FROM billing_core.invoices",
        "CREATE TABLE tmp_dev.inv AS SELECT * FROM billing_core.invoices",
        "INSERT INTO tmp_dev.inv SELECT * FROM billing_core.invoices",
    ):
        assert not _flagged(text, "run_sql", {"query": query}), query


@pytest.mark.parametrize(
    "text",
    [
        "data/raw/ is read-only.",
        "Treat `data/raw/` as read-only; derived data goes to data/interim/.",
        "data/raw/ è in sola lettura: non scrivere, sovrascrivere o cancellare nulla lì.",
        "data/raw/ 只读:不得在其中写入、覆盖、移动或删除任何文件。派生数据写到 data/interim/。",
        "data/raw/는 읽기 전용: 그 안에 쓰기·덮어쓰기·이동·삭제 금지.",
        "data/raw/ é somente leitura.",
    ],
)
def test_a_folder_declared_read_only_forbids_writes_there_only(text: str) -> None:
    """The folder named before "read-only" (in the forms other languages write it, a
    Korean particle written against the path) may be read, not written; the "only" of
    "read-only" (只读) makes no other folder the only one writable."""
    assert _flagged(text, "bash", {"command": "rm data/raw/sales_01.csv"})
    assert _flagged(text, "python", {"code": "d.to_csv('data/raw/sales_01.csv')"})
    assert not _flagged(text, "bash", {"command": "cat data/raw/sales_01.csv"})
    assert not _flagged(text, "python", {"code": "d.to_parquet('data/interim/s.parquet')"})
    assert not _flagged(text, "bash", {"command": "touch out/report.md"})


def test_read_only_access_forbids_no_folder_named_after_it() -> None:
    text = "You have read-only access to the warehouse; write your results to out/."
    assert not _flagged(text, "bash", {"command": "touch out/report.md"})


def test_sql_statements_named_in_capitals_are_forbidden_everywhere_not_other_capitals() -> None:
    text = "NEVER DROP, TRUNCATE OR ALTER ANYTHING."
    assert _flagged(text, "psql", {"command": "psql -c 'DROP TABLE users'"})
    assert not _flagged(text, "psql", {"command": "psql -c 'SELECT 1'"})
    assert derive("NEVER DELETE FILES IN THE HOME FOLDER.").rules == ()


@pytest.mark.parametrize(
    "text",
    [
        "Write temporary tables only to sandbox_ml.",
        "Agents may write only into the schema sandbox_ml; the rest is read-only.",
        "Schreibe nur in das Schema sandbox_ml.",
        "Escribe solo en el esquema sandbox_ml.",
    ],
)
def test_writes_only_to_a_named_schema(text: str) -> None:
    assert _flagged(text, "sql", {"query": "CREATE TABLE reporting.t AS SELECT 1"})
    assert _flagged(text, "sql", {"query": "INSERT INTO reporting.t SELECT 1"})
    assert not _flagged(text, "sql", {"query": "CREATE TABLE sandbox_ml.t AS SELECT 1"})
    # the statement's optional words are not the target it writes
    assert not _flagged(text, "sql", {"query": "INSERT INTO sandbox_ml.t SELECT 1"})
    assert not _flagged(
        text, "sql", {"query": "CREATE TABLE IF NOT EXISTS sandbox_ml.t AS SELECT 1"}
    )
    assert not _flagged(text, "sql", {"query": "SELECT * FROM reporting.t"})


@pytest.mark.parametrize(
    "text",
    [
        'Never click "Confirm transfer".',
        'Klicke niemals auf "Confirm transfer".',
        'Nunca hagas clic en "Confirm transfer".',
        "「Confirm transfer」をクリックしないこと。",
        "不要点击“Confirm transfer”。",
    ],
)
def test_a_quoted_button_label_is_matched_on_what_the_click_targets(text: str) -> None:
    assert _flagged(text, "browser_click", {"element": "Confirm transfer", "ref": "e9"})
    assert not _flagged(text, "browser_click", {"element": "Cancel", "ref": "e3"})
    assert not _flagged(text, "browser_type", {"element": "memo", "text": "Confirm transfer"})


def test_a_tool_named_after_before_needs_the_approval_the_asking_tool_does_not() -> None:
    text = (
        "Closing accounts requires approval: call request_approval and wait before close_account."
    )
    assert _flagged(text, "crm__close_account", {"account": "x"})
    assert not _flagged(text, "crm__get_account", {"account": "x"})
    assert not _flagged(text, "request_approval", {"question": "May I close_account x?"})


def test_paths_keep_their_case() -> None:
    values = [r.value for r in derive("Never edit CHANGELOG.md or Docs/API/.").rules]
    assert values == ["CHANGELOG.md", "Docs/API/**"]


def _session_broken(text: str, calls: list[tuple[str, dict[str, Any], str]]) -> list[int]:
    """The seqs of the steps that break the policy derived from ``text``, in a session
    of ``calls`` (tool, arguments, result)."""
    policy = Policy.from_mapping("p", derive(text).mapping("p"))
    s, state = Session(), PolicyState()
    steps = [s.start()]
    for tool, args, result in calls:
        steps += s.tool(tool, args, result=result)
    return [st.seq for st in steps if policy.check(st, state)]


def test_a_click_by_index_breaks_a_button_rule_when_its_result_names_the_button() -> None:
    text = 'Never press "Confirm transfer".'
    broken = _session_broken(
        text,
        [
            ("click_element_by_index", {"index": 3}, "Clicked button with index 3: Cancel"),
            (
                "click_element_by_index",
                {"index": 9},
                "Clicked button with index 9: Confirm transfer",
            ),
            ("go_to_url", {"url": "https://bank.example/done"}, "Confirm transfer page"),
        ],
    )
    assert broken == [4], broken  # the second click's result, not the page text after it


def test_a_short_answer_repeating_the_asked_action_grants_it() -> None:
    text = "Never send an e-mail unless the user has said so (use ask_user)."
    mail = {"to": "a.b@example.org", "body": "ok"}
    granted = _session_broken(
        text, [("ask_user", {"question": "Draft ready. Send it?"}, "send"), ("send_mail", mail, "")]
    )
    refused = _session_broken(
        text,
        [
            ("ask_user", {"question": "Draft ready. Send it?"}, "don't send"),
            ("send_mail", mail, ""),
        ],
    )
    assert granted == []
    assert refused == [3]


@pytest.mark.parametrize(
    ("text", "over", "under"),
    [
        ("Payouts of $1,000 or more require approval before sendPayout.", 1000, 999.5),
        ("Payouts exceeding 1,000 USD need sign-off before send_payout.", 1000.5, 1000),
    ],
)
def test_amount_forms_thousands_and_or_more(text: str, over: float, under: float) -> None:
    assert _flagged(text, "payments.sendPayout", {"iban": "DE00", "amount": over})
    assert not _flagged(text, "payments.sendPayout", {"iban": "DE00", "amount": under})


def test_an_unquoted_button_label_before_the_word_button() -> None:
    text = "Never click the Place Order button."
    assert _flagged(text, "browser_click", {"element": "Place Order", "ref": "e4"})
    assert not _flagged(text, "browser_click", {"element": "Orders", "ref": "e5"})


@pytest.mark.parametrize(
    "text",
    [
        "Send e-mails only after the user confirms.",
        "Only send email after explicit confirmation from the user.",
    ],
)
def test_only_after_a_persons_confirmation_is_an_approval(text: str) -> None:
    mail = {"to": "a@b.org", "body": "x"}
    assert _flagged(text, "send_email", mail)
    assert not _flagged(text, "create_draft", mail)


def test_a_generic_amount_noun_reads_the_action_after_before() -> None:
    text = "Anything over €50 needs sign-off from a team lead before you refund it."
    assert _flagged(text, "issue_refund", {"order": "1", "amount": 80})
    assert not _flagged(text, "issue_refund", {"order": "1", "amount": 20})
    assert not _flagged(text, "charge_card", {"order": "1", "amount": 80})


@pytest.mark.parametrize(
    "text", ["ledger_core: read only until the audit ends.", "Don't write to ledger_core."]
)
def test_a_table_named_alone_before_read_only_or_after_write_to(text: str) -> None:
    assert _flagged(text, "run_sql", {"query": "UPDATE ledger_core.entries SET x = 1"})
    assert not _flagged(text, "run_sql", {"query": "SELECT * FROM ledger_core.entries"})
    assert not _flagged(text, "run_sql", {"query": "UPDATE sandbox.entries SET x = 1"})


@pytest.mark.parametrize(
    "text", ["Never press the 'Buy now' button.", "Stop before the payment step; do not click Pay."]
)
def test_single_quoted_and_bare_capitalised_labels(text: str) -> None:
    label = "Buy now" if "Buy" in text else "Pay"
    assert _flagged(text, "browser_click", {"element": label, "ref": "e1"})
    assert not _flagged(text, "browser_click", {"element": "Add to list", "ref": "e2"})


@pytest.mark.parametrize(
    "text",
    [
        # the condition is the approval itself, not one the policy cannot state
        "POLICY: any payment above 10,000 EUR needs request_approval first and is only paid "
        "if APPROVED. Smaller ones you may pay directly.",
        # thousands grouped by dots
        "Zahlungen über 10.000 EUR erfordern eine Freigabe vor create_payment.",
    ],
)
def test_a_payment_limit_stated_with_its_approval_condition_or_dotted_thousands(
    text: str,
) -> None:
    assert _flagged(text, "create_payment", {"invoice": "INV-1", "amount": 33012.96})
    assert not _flagged(text, "create_payment", {"invoice": "INV-2", "amount": 6030.85})
    assert not _flagged(
        text, "create_payment", {"invoice": "INV-1", "amount": 33012.96}, approved=True
    )


@pytest.mark.parametrize(
    "text",
    [
        "今週期日の承認済み仕入先請求書をすべて支払い、一覧を送ってください。",
        "支付所有已批准的发票。",
        "Pay all approved vendor invoices due this week and send me a list.",
    ],
)
def test_approved_objects_in_a_request_are_no_approval_rule(text: str) -> None:
    """ "The approved invoices" describes what to pay; it asks for no approval."""
    assert derive(text).rules == ()
