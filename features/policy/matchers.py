"""Regexes that recognise an action by what it does, for rules derived from instructions.

A rule names an action ("terraform apply", "push to `main`", "set image in namespace
prod", "e-mail outside @acme.de", "book or pay"); the call that performs it may be spelt
many ways (``terraform -chdir=infra apply -auto-approve``, ``git push origin HEAD:main``,
``kubectl -n prod set image …``). These builders key on the parts that carry the meaning —
the program, its subcommand anywhere among its flags, the target branch, the namespace
flag, the recipient's domain, the verb in a tool's name — within one shell segment
(``[^;&|\\n]``, so ``git checkout main && git push origin feat`` is not a push to main).

Every regex is bounded: each run is a bounded class repetition after a literal anchor (the
program's name, the start of the text), so a search does a bounded amount of work per
position (the rule of :mod:`features.policy.instructions`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from features.text.drafts import not_drafting_lookahead

__all__ = [
    "CLICK",
    "DB_CALL",
    "FILE_DELETE",
    "FORCE_PUSH",
    "KUBECTL_MUTATING",
    "MIGRATION",
    "PAY_CLICK",
    "SQL_DDL",
    "SQL_DML",
    "SQL_KINDS",
    "SQL_WRITE",
    "click_on",
    "command",
    "identifier_other_than",
    "mail_outside",
    "mail_send",
    "names_object",
    "noun_tool",
    "number_above",
    "push_to",
    "sql_statement",
    "tool_call",
    "tool_named",
    "tool_verb",
    "with_amount_above",
]

_SEG = r"[^;&|\n]{0,240}?"
"""The rest of one shell segment, bounded."""
_FLAGS = r"(?:\s+--?[\w-]{1,40}(?:=[^\s;&|]{0,200}|\s+(?!-)[^\s;&|]{1,200})?){0,8}?"
"""Global flags between a program and its subcommand, each with its value if any."""

KUBECTL_MUTATING = (
    "apply",
    "delete",
    "scale",
    "patch",
    "set image",
    "set env",
    "rollout restart",
    "rollout undo",
    "exec",
    "edit",
    "create",
    "replace",
    "annotate",
    "label",
    "cordon",
    "drain",
    "taint",
    "autoscale",
)
"""kubectl's subcommands that change a cluster (its CLI's vocabulary, not phrasing)."""

SQL_WRITE = (
    r"(?i)\b(?:delete\s+from|update\s+[\w.\"]+\s+set|insert\s+into|drop\s+(?:table|index|schema"
    r"|database|view|column)|alter\s+table|truncate(?:\s+table)?|create\s+(?:unique\s+)?index)\b"
)
"""SQL statements that change data or schema."""
MIGRATION = (
    r"(?i)(?:\bdb:migrate\b|\bmigrate\b|\balembic\s+upgrade\b|\bflyway\b|\bliquibase\s+update\b)"
)
"""Running a schema migration, whatever the framework."""
DB_CALL = r"(?i)(?:\bpsql\b|\bmysql\b|\bsqlite3?\b|sql|query|\bselect\b|\bmigrat)"
"""A call that talks to a database (a SQL client, a query tool, a migration)."""


def _words(phrase: str) -> str:
    return r"\s+".join(re.escape(w) for w in phrase.split())


def command(
    program: str,
    subcommands: Sequence[str] = (),
    *,
    namespaces: Sequence[str] = (),
    except_namespaces: Sequence[str] = (),
    at: Sequence[str] = (),
) -> str:
    """``program`` run with one of ``subcommands`` anywhere among its flags, optionally
    against one of ``namespaces`` (``-n``/``--namespace``), or against a namespace other
    than ``except_namespaces``, or in one of the folders ``at`` (``envs/prod``: named in
    its segment, ``-chdir=envs/prod/x``, ``apply envs/prod``, or changed into just before
    it, ``cd envs/prod && …``; not ``envs/production`` nor ``envs/staging``).

    >>> p = re.compile(command("terraform", ["apply", "destroy"]))
    >>> [bool(p.search(c)) for c in ("terraform -chdir=x apply -auto-approve", "terraform plan")]
    [True, False]
    >>> bool(re.search(command("helm", ["upgrade"]), "helm diff upgrade api ./chart"))
    False
    >>> p = re.compile(command("kubectl", ["set image"], namespaces=["prod"]))
    >>> bool(p.search("kubectl -n prod set image d/x a=b"))
    True
    >>> bool(p.search("kubectl -n staging set image d/x a=b"))
    False
    >>> p = re.compile(command("terraform", ["apply"], at=["envs/prod"]))
    >>> [bool(p.search(c)) for c in ("terraform -chdir=envs/prod/dns apply tfplan",
    ...     "cd infra/envs/prod/dns && terraform apply", "terraform -chdir=envs/staging apply",
    ...     "terraform -chdir=envs/prod plan && terraform -chdir=envs/staging apply")]
    [True, True, False, False]
    """
    head = rf"\b{re.escape(program)}\b"
    if at:
        places = "|".join(re.escape(p.strip("/")) for p in at)
        place = rf"(?<![\w-])(?:{places})(?![\w-])"
        rest = command(
            program, subcommands, namespaces=namespaces, except_namespaces=except_namespaces
        )
        rest = rest.removeprefix(head)
        # the place in the command's segment, or a ``cd`` into it just before the command
        inside = rf"{head}(?={_SEG}{place}){rest}"
        cd_into = rf"\bcd\s+[^\s;&|]{{0,200}}?{place}[^\s;&|]{{0,200}}\s*(?:&&|;)\s*{head}{rest}"
        return rf"(?:{inside}|{cd_into})"
    out = head
    ns_flag = r"\s(?:-n|--namespace)(?:\s+|=)"
    if namespaces:  # anywhere in the segment: before the subcommand or after it
        names = "|".join(re.escape(n) for n in namespaces)
        out += rf"(?={_SEG}{ns_flag}(?:{names})(?![\w-]))"
    if except_namespaces:
        names = "|".join(re.escape(n) for n in except_namespaces)
        out += rf"(?={_SEG}{ns_flag}(?!(?:{names})(?![\w-]))[\w-])"
    if subcommands:
        # the subcommand is the first word that is not a global flag or its value
        # (``terraform -chdir=x apply``, ``kubectl -n prod rollout restart``), so
        # ``helm diff upgrade`` (the diff plugin) is not an upgrade
        alts = "|".join(_words(s) for s in subcommands)
        out += rf"{_FLAGS}\s+(?:{alts})(?![\w-])"
    return out


def push_to(branch: str) -> str:
    """A ``git push`` whose destination is ``branch`` (``origin main``, ``HEAD:main``,
    ``refs/heads/main``), not a branch that merely contains the name.

    >>> p = re.compile(push_to("main"))
    >>> [bool(p.search(c)) for c in ("git push origin HEAD:main",
    ...                              "git push -u origin feat/main-fix",
    ...                              "git checkout main && git push origin feat")]
    [True, False, False]
    """
    b = re.escape(branch)
    return PUSH + rf"(?={_SEG}[\s:](?:refs/heads/)?{b}(?![\w./-]))"


PUSH = command("git", ["push"])
"""Any ``git push``."""


def mail_outside(domain: str | None) -> str:
    """A call of a mail-sending tool (its name says mail) whose arguments name an address
    outside ``domain`` (any address when None). The text of a non-shell call starts with
    the tool's name (:class:`features.calls.tool_view.ToolView`).

    >>> p = re.compile(mail_outside("acme.de"))
    >>> [bool(p.search(t)) for t in ("send_email hi x@vendor.es", "send_email hi x@acme.de",
    ...                              "read_file x@vendor.es")]
    [True, False, False]
    """
    head = r"(?i)^[\w.:-]{0,80}?mail[\w.:-]{0,80}\s[\s\S]{0,4000}?[\w.+-]@"
    if domain is None:
        return head + r"[\w-]"
    d = re.escape(domain.lower().lstrip("@"))
    return head + rf"(?!(?:[\w-]+\.)*{d}\b)[\w-]"


_READ_LED = (
    r"(?:[\w.:-]{0,80}?(?:__|[.:]))?"  # past a namespace (``mcp__air__``, ``crm.``) if any
    r"(?:get|list|search|find|look_?up|fetch|read|show|describe|view|query|retrieve|check)"
    r"(?:[_-]|(?-i:[A-Z]))"
)
"""A tool name led by a verb that reads (``get_reservation_details``, ``mcp__air__list
_bookings``, ``getPaymentStatus``): the verbs after it name what it reads."""


def tool_verb(verbs: Sequence[str]) -> str:
    """A tool whose *name* carries one of ``verbs`` (``book_train``, ``mcp__shop__checkout``)
    as what it does: not a name led by a verb that reads (:data:`_READ_LED`), whose other
    words name what it reads - ``get_reservation_details`` books nothing.

    >>> p = re.compile(tool_verb(["book", "reserv", "pay"]))
    >>> [bool(p.search(t)) for t in ("mcp__travel__book_train x", "search_hotels Porto",
    ...                              "pay_invoice 3", "get_reservation_details BAP6ET",
    ...                              "mcp__air__list_bookings u1", "getPaymentStatus 9",
    ...                              "book_reservation {}")]
    [True, False, True, False, False, False, True]
    """
    alts = "|".join(re.escape(v) for v in verbs)
    return rf"(?i)^(?!{_READ_LED})[\w.:-]{{0,80}}?(?:{alts})[\w.:-]{{0,80}}(?:\s|$)"


def identifier_other_than(allowed: str) -> tuple[str, str] | None:
    """For a typed identifier (``acct_1Stg…``: a short prefix, ``_``, a key; or a flag and
    its value, ``--profile staging``): (a regex for another identifier of the same type, a
    regex for any of that type); None for anything else.

    >>> p, within = identifier_other_than("acct_1StgftN8u2Zrhj")
    >>> bool(re.search(p, "acct_1Live7Ij54sM06")), bool(re.search(p, "acct_1StgftN8u2Zrhj"))
    (True, False)
    >>> bool(re.search(identifier_other_than("--profile staging")[0], "s3 ls --profile prod"))
    True
    """
    m = re.fullmatch(r"([a-z]{2,8}_)([A-Za-z0-9]{6,64})", allowed)
    if m:
        prefix, key = re.escape(m[1]), re.escape(m[2])
        return rf"\b{prefix}(?!{key}\b)[A-Za-z0-9]", rf"\b{prefix}[A-Za-z0-9]"
    m = re.fullmatch(r"(--[a-z][\w-]{1,30})[\s=]+([\w.-]{1,64})", allowed)
    if m:
        flag, value = re.escape(m[1]), re.escape(m[2])
        return rf"{flag}(?:\s+|=)(?!{value}(?![\w-]))[\w-]", rf"{flag}(?:\s+|=)[\w-]"
    return None


# -- what a call does, for the shapes of structured rules ------------------------------------

_HEAD = r"(?i)^[\w.:-]{0,80}?"
"""The start of a non-shell call's text: its tool name (``mcp__shop__issue_refund``)."""

GENERIC_TOOL_VERBS = frozenset(
    ["issue", "create", "make", "do", "run", "call", "execute", "perform", "invoke", "process"]
)
"""Verbs of a tool's name that say nothing of what it does (``issue_refund`` is a refund,
as ``stripe__create_refund`` is)."""


def tool_call(name: str) -> str:
    """A call of the tool ``name`` itself (an MCP server's prefix allowed:
    ``mcp__social__social_publish``), not of a tool whose name only contains it.

    >>> p = re.compile(tool_call("social_publish"))
    >>> [bool(p.search(t)) for t in ("social_publish x Hello", "mcp__s__social_publish x",
    ...                              "social_publish_draft x", "bash social_publish")]
    [True, True, False, False]
    """
    return rf"(?i)^(?:[\w.:-]*?__)?{re.escape(name)}(?![\w-])"


def tool_named(identifier: str) -> str | None:
    """A call of a tool whose name carries the content words of ``identifier`` (a tool a
    rule names: ``issue_refund`` → any tool whose name has ``refund``; ``delete_customer``
    → ``crm_delete_customer``); None when the identifier has no content word.

    >>> p = re.compile(tool_named("issue_refund"))
    >>> [bool(p.search(t)) for t in ("stripe__create_refund #1 EUR", "shopify__get_order #1",
    ...                              "bash echo refund")]
    [True, False, False]
    """
    words = [w for w in re.split(r"[_.\-]+|(?<=[a-z])(?=[A-Z])", identifier) if w]
    words = [w.lower() for w in words if w.lower() not in GENERIC_TOOL_VERBS and len(w) > 1]
    if not words:
        return None
    looks = "".join(rf"(?=[\w.:-]{{0,80}}?{re.escape(w)})" for w in words)
    return rf"(?i)^{looks}[\w.:-]{{1,120}}(?:\s|$)"


def noun_tool(*nouns: str) -> str:
    """A call of a tool whose name carries one of ``nouns`` (stems: ``refund``), the action
    a rule names by its object ("refunds above 50 EUR need approval", "any order with a
    notional above …": ``order`` or ``notional``).

    >>> bool(re.search(noun_tool("refund"), "stripe__create_refund #1"))
    True
    >>> bool(re.search(noun_tool("notional", "order"), "place_order AAPL"))
    True
    """
    alts = "|".join(re.escape(n.lower()) for n in nouns)
    return rf"(?i)^(?=[\w.:-]{{0,80}}?(?:{alts}))[\w.:-]{{1,120}}(?:\s|$)"


def names_object(name: str) -> str:
    """A call that names ``name`` (a partition, a host, a bucket a rule is about) as a word
    of its text: ``a100-res`` in ``sbatch -p a100-res job.sh``, not in ``a100-res2``.

    >>> p = re.compile(names_object("a100-res"))
    >>> [bool(p.search(t)) for t in ("sbatch -p a100-res job.sh", "sbatch --partition=a100-res x",
    ...                              "sbatch -p a100-res2 x", "sbatch -p dev x")]
    [True, True, False, False]
    """
    return rf"(?i)(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)"


def number_above(limit: float) -> str:
    """A regex for a decimal number greater than ``limit`` (its integer part compared
    digit by digit; a fraction counts above an integer limit). Anchored by the caller.

    >>> p = re.compile(rf"^(?:{number_above(50)})$")
    >>> [bool(p.match(n)) for n in ("51", "50.01", "130.59", "50", "49.99", "7", "1000")]
    [True, True, True, False, False, False, True]
    """
    n = str(int(limit))
    k = len(n)
    alts = [rf"[1-9]\d{{{k},}}(?:\.\d+)?"]  # more digits
    for i, d in enumerate(n):
        if d != "9":
            head = re.escape(n[:i])
            alts.append(rf"{head}[{int(d) + 1}-9]\d{{{k - i - 1}}}(?:\.\d+)?")
    frac = limit - int(limit)
    if frac:
        digits = f"{frac:.6f}"[2:].rstrip("0")
        alts.append(rf"{n}\.(?:{_fraction_above(digits)})")
    else:
        alts.append(rf"{n}\.\d*[1-9]\d*")
    return "|".join(alts)


def _fraction_above(digits: str) -> str:
    """Fraction digits greater than ``digits`` (``5`` → ``[6-9]\\d*|5\\d*[1-9]\\d*``)."""
    alts = []
    for i, d in enumerate(digits):
        if d != "9":
            alts.append(rf"{re.escape(digits[:i])}[{int(d) + 1}-9]\d*")
    alts.append(rf"{re.escape(digits)}\d*[1-9]\d*")
    return "|".join(alts)


def with_value(action: str, value: str) -> str:
    """``action`` (a regex anchored at the start of the call's text) done with ``value`` as
    a word of its arguments: the rule's "`intune_device_action` with action `wipe`" is
    about wiping, not about every device action.

    >>> p = re.compile(with_value(tool_named("intune_device_action"), "wipe"))
    >>> [bool(p.search(t)) for t in ("intune_device_action wipe 7e27", "intune_device_action "
    ...                              "retire 7e27", "intune_device_action wipe_log 1")]
    [True, False, False]
    """
    return rf"{action}(?=[\s\S]{{0,4000}}?(?<![\w.-]){re.escape(value)}(?![\w-]))"


def with_amount_above(action: str, limit: float) -> str:
    """``action`` (a regex anchored at the start of the call's text) done with a numeric
    argument above ``limit``: the call's numeric arguments follow its text as
    ``key=value`` (:attr:`features.calls.tool_view.ToolView.numbers`).

    >>> p = re.compile(with_amount_above(noun_tool("refund"), 50))
    >>> [bool(p.search(t)) for t in ("create_refund #1 EUR\\namount=80",
    ...                              "create_refund #1\\namount=33.0",
    ...                              "get_order #1\\ntotal=80")]
    [True, False, False]
    """
    number = number_above(limit)
    return (
        rf"{action}(?=[\s\S]{{0,4000}}?\n(?:[^\n]{{0,400}}\s)?[\w.-]{{1,60}}=(?:{number})(?![\d.]))"
    )


SQL_KINDS: dict[str, str] = {
    "insert": r"insert\s+(?:into\s+)?+",
    "update": r"update\s+(?:only\s+)?+",
    "delete": r"delete\s+from\s+",
    "drop": r"drop\s+(?:table|view|schema|database|index|materialized\s+view)\s+"
    r"(?:if\s+exists\s+)?+",
    "alter": r"alter\s+(?:table|view|schema|database|index)\s+(?:if\s+exists\s+)?+",
    "truncate": r"truncate\s+(?:table\s+)?+",
    "create": r"create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:table|view|schema|index"
    r"|materialized\s+view)\s+(?:if\s+not\s+exists\s+)?+",
    "merge": r"merge\s+into\s+",
    "refresh": r"refresh\s+materialized\s+view\s+(?:concurrently\s+)?+",
}
"""SQL statements that change data or schema, up to their target's name. Their optional
words are possessive (``?+``): a rule "write only to scratch" must not match ``INSERT INTO
scratch.t`` by leaving ``INTO`` out and reading it as the target."""
SQL_DDL = ("create", "alter", "drop", "truncate", "refresh")
SQL_DML = ("insert", "update", "delete", "merge")
_SQL_NAME = r"[\w.\"`\[\]]"


def sql_statement(
    kinds: Sequence[str] = (),
    *,
    target: str | None = None,
    outside: str | Sequence[str] | None = None,
) -> str:
    """A SQL statement of ``kinds`` (all writes when empty) whose target (the table it
    writes) is in ``target`` (a schema or a table: ``analytics_prod`` matches
    ``analytics_prod.events``), or not in ``outside`` (one name or several). Reading from
    a name is not writing to it (``CREATE TABLE scratch.t AS SELECT … FROM prod.events``
    writes scratch).

    >>> p = re.compile(sql_statement(target="analytics_prod"))
    >>> [bool(p.search(q)) for q in ("DELETE FROM analytics_prod.events WHERE x",
    ...     "CREATE TABLE scratch.t AS SELECT * FROM analytics_prod.events",
    ...     "SELECT * FROM analytics_prod.events")]
    [True, False, False]
    >>> p = re.compile(sql_statement(outside="scratch"))
    >>> [bool(p.search(q)) for q in ("insert into prod.t values (1)",
    ...     "INSERT INTO scratch.t SELECT 1", "CREATE TABLE IF NOT EXISTS scratch.t AS SELECT 1",
    ...     "drop table if exists scratch.t", "truncate table scratch.t", "update prod.t set x=1")]
    [True, False, False, False, False, True]
    """
    verbs = "|".join(SQL_KINDS[k] for k in (kinds or SQL_KINDS))
    out = rf"(?i)(?<![\w.])(?:{verbs})"
    if target:
        t = re.escape(target)
        out += rf"{_SQL_NAME}{{0,130}}?(?<![\w]){t}(?![\w])"
    elif outside:
        names = [outside] if isinstance(outside, str) else list(outside)
        o = "(?:" + "|".join(re.escape(n) for n in names) + ")"
        out += rf"(?!{_SQL_NAME}{{0,130}}?(?<![\w]){o}(?![\w])){_SQL_NAME}"
    else:
        out += r"[\w\"`\[]"
    return out


_SEND_WORDS = r"(?:send|reply|forward|submit)"
_MAIL_WORDS = r"(?:mail|message|smtp)"


def mail_send() -> str:
    """A call that sends mail: a tool whose name says mail (or message) and send (or reply,
    forward): ``send_email``, ``gmail_send``, ``outlook.reply``; a draft is not a send,
    its send is (:mod:`features.text.drafts`).

    >>> p = re.compile(mail_send())
    >>> [bool(p.search(t)) for t in ("send_email x@y.de hi", "gmail_send x@y.de",
    ...                              "draft_email x@y.de", "mail.create_reply_draft 17",
    ...                              "gmail.send_draft 17", "read_email 123")]
    [True, True, False, False, True, False]
    """
    return (
        rf"(?i)^(?=[\w.:-]{{0,80}}?{_SEND_WORDS})(?=[\w.:-]{{0,80}}?{_MAIL_WORDS})"
        rf"{not_drafting_lookahead()}[\w.:-]{{1,120}}(?:\s|$)"
    )


_CLICK_TOOL = (
    r"(?=[\w.:-]{0,80}?(?:click|press|tap|select|submit)"
    r"|[^\n]{0,300}?\b(?:left_|right_|double_)?click\b)"
)


def click_on(label: str) -> str:
    """A click (press, tap) whose target names ``label`` (a button's text: "Place order").

    >>> p = re.compile(click_on("Place order"))
    >>> [bool(p.search(t)) for t in ("browser_click Place order e42", "browser_click Add e8",
    ...                              "browser_type Place order")]
    [True, False, False]
    """
    words = r"\s+".join(re.escape(w) for w in label.split())
    return rf"(?i)^{_CLICK_TOOL}[\s\S]{{0,4000}}?(?<![\w]){words}(?![\w])"


CLICK = rf"(?i)^{_CLICK_TOOL}"
"""Any click (the calls a rule about clicking is kept by)."""

_PAY_LABELS = (
    "pay",
    "pay now",
    "place order",
    "buy now",
    "buy",
    "purchase",
    "checkout",
    "submit order",
    "comprar",
    "pagar",
    "bezahlen",
    "kaufen",
    "payer",
    "acheter",
    "支払",
    "购买",
    "注文を確定",
)
PAY_CLICK = (
    rf"(?i)^{_CLICK_TOOL}[\s\S]{{0,4000}}?(?<![\w])(?:"
    + "|".join(r"\s+".join(map(re.escape, w.split())) for w in _PAY_LABELS)
    + r")(?![\w])"
)
"""A click on a button that pays (its label says pay, buy, order, checkout)."""

PUBLISH = tool_verb(["publish"]) + (
    r"|\b(?:npm|pnpm|yarn|cargo|gem|poetry)\s+publish\b|\btwine\s+upload\b|\bgh\s+release\s+create\b"
)
"""A tool named for publishing (``social__publish_post``, ``publish_episode``) or a package
manager's publish command."""

FORCE_PUSH = (
    command("git", ["push"]) + r"(?=[^;&|\n]{0,240}?\s(?:-f|--force(?:-with-lease)?)(?![\w-]))"
)
"""A forced ``git push``."""

FILE_DELETE = (
    # (``rm`` as another program's subcommand removes what that program keeps: a
    # BigQuery table or partition, a container, a package - no file)
    r"(?i)(?:(?<![\w-])(?<!\bbq\s)(?<!\bdocker\s)(?<!\bpodman\s)(?<!\bnerdctl\s)"
    r"(?<!\bnpm\s)(?<!\bpnpm\s)(?<!\byarn\s)(?<!\bcargo\s)rm\s+(?:-\w+\s+){0,3}[^\s;&|]"
    r"|^(?=[\w.:-]{0,80}?(?:delete|remove))(?=[\w.:-]{0,80}?(?:file|dir|folder|path))"
    r"[\w.:-]{1,120}(?:\s|$))"
)
"""Deleting files: ``rm``, or a tool named for deleting a file or folder.

>>> p = re.compile(FILE_DELETE)
>>> [bool(p.search(t)) for t in ("bash rm -rf build/", "bash sudo rm -f /tmp/x",
...                              "bash bq rm -f -t 'p:claims.remits$20250627'",
...                              "bash docker rm -f web", "delete_file src/a.py")]
[True, True, False, False, True]
"""
