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

__all__ = [
    "DB_CALL",
    "KUBECTL_MUTATING",
    "MIGRATION",
    "SQL_WRITE",
    "command",
    "identifier_other_than",
    "mail_outside",
    "push_to",
    "tool_verb",
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
) -> str:
    """``program`` run with one of ``subcommands`` anywhere among its flags, optionally
    against one of ``namespaces`` (``-n``/``--namespace``), or against a namespace other
    than ``except_namespaces``.

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
    """
    out = rf"\b{re.escape(program)}\b"
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


def tool_verb(verbs: Sequence[str]) -> str:
    """A tool whose *name* carries one of ``verbs`` (``book_train``, ``mcp__shop__checkout``).

    >>> p = re.compile(tool_verb(["book", "pay"]))
    >>> [bool(p.search(t)) for t in ("mcp__travel__book_train x", "search_hotels Porto",
    ...                              "pay_invoice 3")]
    [True, False, True]
    """
    alts = "|".join(re.escape(v) for v in verbs)
    return rf"(?i)^[\w.:-]{{0,80}}?(?:{alts})[\w.:-]{{0,80}}(?:\s|$)"


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
