"""Rules read from the structure of a sentence, in any of the languages of
:mod:`features.policy.lexicon`: what :mod:`features.policy.instructions`' English grammar
falls back to when it finds no rule in a sentence.

A rule sentence names *objects* that are written the same in every language — a
backticked command or path, a program and its subcommand (``terraform apply``,
``helm upgrade/install``), a branch after a push, namespaces, an ``@domain``, a typed
identifier (``acct_1Stg…``, ``--profile staging``), a table (``raw.customers``), a time
(``18:00 UTC``, ``2026-01-21 09:00``) — and says one of three things about them, each
marked by a closed-class word: they need a person's approval (ask/confirm + before/
without), they are forbidden (a negation, "read-only"), or they are the only ones allowed
("only", "nur", "solo", "のみ", "只"). :func:`clause_rules` maps (marker, objects) to policy
entries; the actions are recognised by :mod:`features.policy.matchers` from what a call
does. A line that states a time bounds the prohibitions of its sentences (a freeze):
:func:`time_bound`.

The shapes (issue 26), each judged on what a call does, never on the sentence's words:

- *a prohibition waiting for a person's say-so* ("never X unless the user says so",
  "nunca … sin autorización del usuario", "ユーザーの確認なしに…しないこと"): an approval for X;
- *"X requires approval: call T before U"*: the asking tool (``request_approval``) marks
  the clause as asking, ``U`` is a tool matched by the content words of its name
  (``issue_refund`` → any tool named ``…refund…``); snake_case or camelCase;
- *an amount limit* ("refunds above 50 EUR", "über 50 €", "$1,000 or more"): the approval
  holds only for a call with a numeric argument above it
  (:attr:`features.calls.tool_view.ToolView.numbers`);
- *SQL in prose*: statements named in capitals (``INSERT/UPDATE/DELETE/DDL``), a table or
  schema said to be read-only or named with a negation (and "there" pointing back to
  its line): a SQL statement of those kinds whose *target* is that table; "write tables
  only to X": a SQL write whose target is elsewhere;
- *buttons*: a click verb and a quoted label ("never click "Place order"", 「…」, “…”) or
  capitalised words before "button": a click whose target — in its arguments, or in its
  result for clicks by index or coordinates — is that label;
- *mail*: sending (a tool named send/reply + mail/message), not drafting; outside an
  ``@domain`` when one is named;
- *an action scoped to a place* ("`terraform apply` / `destroy` in envs/prod: only after
  request_approval approves", "envs/prod での…"): the command run in that folder
  (:func:`features.policy.matchers.command` ``at``), not in ``envs/staging``; the objects
  may sit in a head clause and the marker in the clause after the colon;
- *read-only with an exception* ("read-only, except schema scratch_kim", "außer …",
  "…以外"): a SQL write outside it; SQL statements in capitals *on* named schemas ("never
  run DELETE or MERGE on analytics or raw"): those statements whose target is one of them;
- *a spending cap* ("any order above 800 EUR", "a trade with a notional of more than …",
  "ningún pedido de más de 300 EUR", "1000 USD を超える注文"): the approval holds for a
  tool named for the noun, or for spending (order, book, pay …), above the amount;
- *examples in parentheses* ("never touch state by hand (no state rm / force-unlock)"):
  each command fragment (two or three words, or a hyphenated word) is forbidden.

Pure; linear in the sentence (bounded regexes over at most 600 characters).

>>> import re
>>> [(key, bool(re.search(value["action"], "git push origin HEAD:main")))
...  for key, value in clause_rules("Niemals direkt auf `main` pushen")]
[('forbidden_actions', True)]
>>> [k for k, _ in clause_rules("Vor jedem `git push` um Bestätigung bitten")]
['require_approval_for']
>>> time_bound("ÄNDERUNGSSTOPP: Bis heute 18:00 UTC keine Deployments")
'18:00'
>>> time_bound("CODE FREEZE until 2026-01-21 09:00 UTC.")
'2026-01-21T09:00'
>>> time_bound("リリースフリーズ: 2025-10-29T07:21:59Z (UTC) までは internal のみ")
'2025-10-29T07:21:59'
"""

from __future__ import annotations

import re
from typing import Any

from features.calls.tool_view import DEFAULT_APPROVAL_RE
from features.policy import matchers
from features.policy.lexicon import (
    AFTER_RE,
    AMOUNT_RE,
    ASK_RE,
    ASK_VERB_RE,
    BEFORE_RE,
    CAP_RE,
    CLICK_RE,
    CONSENT_RE,
    DATA_NOUN_RE,
    DATABASE_RE,
    DELETE_RE,
    DEPLOY_RE,
    EXCEPT_RE,
    FILE_RE,
    FORCE_RE,
    MAIL_RE,
    MESSAGE_RE,
    MIGRATION_RE,
    MODIFY_RE,
    NEG_RE,
    ONLY_RE,
    PAY_RE,
    PLACE_AFTER_RE,
    PLACE_RE,
    PUBLISH_RE,
    PUSH_RE,
    READ_ONLY_RE,
    READ_RE,
    REQUIRES_RE,
    SEND_RE,
    SPEND_RE,
    SPEND_TOOL_VERBS,
    THERE_RE,
    UNTIL_RE,
    WITHOUT_RE,
    negation,
)

__all__ = ["clause_rules", "names_sql", "sentence_rules", "time_bound"]

Rule = tuple[str, Any]

CLI_PROGRAMS = frozenset(
    [
        "git",
        "terraform",
        "tofu",
        "helm",
        "kubectl",
        "docker",
        "gh",
        "aws",
        "gcloud",
        "az",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "pip",
        "psql",
        "mysql",
        "rm",
        "ssh",
        "scp",
        "rsync",
        "curl",
        "wget",
        "make",
        "ansible-playbook",
        "pulumi",
        "vercel",
        "heroku",
        "flyctl",
        "supabase",
        "prisma",
    ]
)
"""Programs whose next word is a subcommand ("terraform apply", "helm upgrade/install")."""

_TICKED_RE = re.compile(r"`([^`\n]{1,200})`")
_PROGRAM_RE = re.compile(
    r"(?<![\w/.-])("
    + "|".join(sorted(map(re.escape, CLI_PROGRAMS), key=len, reverse=True))
    + r")\s+([a-z][\w:-]{1,30}(?:/[a-z][\w:-]{1,30}){0,4})"
)
_NS_WORD = r"(?:namespaces?|命名空间|ネームスペース|名前空間)"
_LIST_SEP = r"\s*(?:,|、|\band\b|\bund\b|\by\b|\be\b|\bet\b|\bor\b|\bo\b|和|与|及)\s*"
_NAME_LIST = rf"[\w-]{{2,40}}(?:{_LIST_SEP}[\w-]{{2,40}}){{0,5}}"
_NS_AFTER_RE = re.compile(rf"{_NS_WORD}\s+({_NAME_LIST})", re.IGNORECASE)
_NS_BEFORE_RE = re.compile(rf"({_NAME_LIST})\s*(?:命名空间|ネームスペース|名前空間)")
"""Names before the word: the order of Chinese and Japanese ("prod 和 payments 命名空间")."""
_LIST_SPLIT_RE = re.compile(
    r"\s*(?:,|、|\band\b|\bund\b|\by\b|\be\b|\bet\b|\bor\b|\bo\b|和|与|及)\s*"
)
_NOT_NAMES = frozenset(
    [
        "the",
        "a",
        "an",
        "in",
        "im",
        "en",
        "el",
        "la",
        "le",
        "les",
        "no",
        "na",
        "do",
        "der",
        "die",
        "das",
        "den",
        "de",
        "del",
        "of",
        "for",
        "to",
        "your",
        "you",
        "are",
        "is",
        "sind",
        "son",
        "são",
        "sont",
        "est",
        "kubernetes",
        "k8s",
    ]
)
_DOMAIN_RE = re.compile(r"@([a-z0-9-]+(?:\.[a-z0-9-]+)+)", re.IGNORECASE)
_TYPED_ID_RE = re.compile(
    r"(?<![\w-])([a-z]{2,8}_(?=[a-z]*[0-9A-Z])[A-Za-z0-9]{6,64}(?![\w-])"
    r"|--[a-z][\w-]{1,30}[ =][\w.-]{1,64})"
)
"""A typed identifier: a short prefix, ``_`` and a key holding a digit or a capital
(``acct_1StgftN8u2Zrhj``: not ``social_create`` of ``social_create_draft``), or a flag and
its value."""
_DOTTED_RE = re.compile(
    r"(?<![\w.@/-])([a-z_][a-z0-9_]{1,62}\.[a-z_][a-z0-9_]{1,62})(?![\w-]|\.\w)"
)
_TLDS = frozenset(
    [
        "com",
        "org",
        "net",
        "io",
        "dev",
        "ai",
        "app",
        "co",
        "de",
        "es",
        "fr",
        "jp",
        "cn",
        "uk",
        "us",
        "eu",
        "gov",
        "edu",
        "cloud",
        "sh",
        "me",
        "info",
        "biz",
        "pt",
        "br",
        "it",
        "nl",
        "ru",
        "in",
        "ca",
        "au",
        "ch",
        "at",
        "se",
        "no",
        "dk",
        "fi",
        "pl",
        "xyz",
        "tech",
        "site",
        "online",
        "local",
        "internal",
    ]
)
_FILE_ENDINGS = frozenset(
    [
        "json",
        "py",
        "md",
        "txt",
        "toml",
        "lock",
        "yml",
        "yaml",
        "js",
        "ts",
        "tsx",
        "jsx",
        "cfg",
        "ini",
        "env",
        "go",
        "rs",
        "rb",
        "java",
        "sql",
        "csv",
        "log",
        "html",
        "css",
        "xml",
        "sh",
        "tf",
        "tfvars",
    ]
)
_PATH_RE = re.compile(r"(?<![\w@:/.-])((?:\.{0,2}/)?(?:[\w.-]+/)+)(?![A-Za-z0-9_/])")
"""A folder: a token ending in ``/``, whatever script follows it (``data/raw/는``: a Korean
particle written against the path)."""
_TIME_RE = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})?[ T]*(?P<time>(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?)?"
    r"\s*(?:UTC|Z\b|GMT)",
    re.IGNORECASE,
)
_CLAUSE_SPLIT_RE = re.compile(r"\s*(?:[;；。：]|:\s|\s-\s)\s*")


def time_bound(line: str) -> str | None:
    """The end of the window a line's rules hold for ("until 2026-01-21 09:00 UTC",
    "vor 18:00 UTC", "antes de las 18:00 UTC de hoy"): ``YYYY-MM-DDTHH:MM[:SS]`` or
    ``HH:MM[:SS]`` (UTC, on the session's first day; the seconds kept when given - read
    without them, ``07:21:59Z`` was ``21:59``, another time of day). None when the line
    states no UTC time, or states it as a start ("after 18:00")."""
    for m in _TIME_RE.finditer(line[:600]):
        if not (m["date"] or m["time"]):
            continue
        if AFTER_RE.search(line[max(0, m.start() - 24) : m.start()].casefold()):
            return None
        if m["date"]:
            return f"{m['date']}T{m['time'] or '00:00'}"
        return m["time"]
    return None


def sentence_rules(sentence: str, until: str | None = None, line: str = "") -> list[Rule]:
    """The rules of one sentence: clause by clause (cut at ``;``, ``:``, ``。``), each clause
    reading the namespaces its sentence named when it names none ("… never apply there"),
    and the tables its line named when it says "there". An amount limit anywhere in the
    sentence ("any refund above 50 EUR requires approval: … before issue_refund") bounds
    its approval rules about a tool."""
    clauses = [c for c in _CLAUSE_SPLIT_RE.split(sentence[:600]) if c.strip()]
    context: tuple[str, ...] = ()
    label: str | None = None
    amount = _amount(sentence)
    tools_named = bool(_tool_identifiers(sentence))
    out: list[Rule] = []
    head: str | None = None
    for clause in clauses:
        kwargs: dict[str, Any] = {
            "until": until,
            "context_namespaces": context,
            "context_line": line,
            "amount": amount,
            "noun_ok": not tools_named,
            "context_label": label,
        }
        got = clause_rules(clause, **kwargs)
        if not got and head is not None:
            # "`terraform apply` in envs/prod: only after approval": the objects in a
            # head clause that states nothing, the approval in the clause after it (a
            # prohibition after a head, "`make ship`: never on Fridays", is a condition)
            joined = clause_rules(f"{head} {clause}", **kwargs)
            got = [r for r in joined if r[0] == "require_approval_for"]
        head = clause if not got and _has_objects(clause) else None
        for rule in got:
            if rule not in out:
                out.append(rule)
        cap = _tool_cap(clause, until)
        if cap is not None and cap not in out:
            out.append(cap)
        context = _namespaces(clause) or context  # "there" is the last namespaces named
        bare = clause.strip().strip("`\"'*-• ")
        label = bare if _LABEL_ID_RE.fullmatch(bare) else None  # "analytics_prod: read only"
    return out


def _tool_cap(clause: str, until: str | None) -> Rule | None:
    """The cap a clause puts on the one tool it names by its identifier with a comparison
    sign ("`wallet__transfer` only for amounts <= 250 USDC", "wallet__transfer solo per
    importi <= 250"): calling it with a number above the bound is forbidden (a ``<``
    excludes the bound itself), and each call of it within the bound keeps the rule.
    None for any other clause, or one naming several tools (which one the bound is for
    is not said).

    >>> kind, rule = _tool_cap("wallet__transfer solo per importi <= 250 USDC", None)
    >>> kind, "wallet__transfer" in rule["action"], "250" in rule["action"]
    ('forbidden_actions', True, True)
    >>> _tool_cap("keep retries <= 3", None) is None
    True
    """
    tools = _tool_identifiers(clause)
    if len(tools) != 1:
        return None
    start = clause.find(tools[0])
    m = CAP_RE.search(clause, start + len(tools[0]))
    if m is None:
        return None
    limit = _limit(m["n"])
    if limit is None:
        return None
    if not m[0].startswith(("<=", "=<", "≤")):
        limit -= 0.01  # "< 250": 250 itself is over
    tool = matchers.tool_call(tools[0])
    # kept by each call of the tool within the bound: what compliance_decay counts as
    # the rule honoured before a compaction
    return _forbid(matchers.with_amount_above(tool, limit), tool, until)


_LABEL_ID_RE = re.compile(r"[A-Za-z_][\w]{1,62}_[\w]{1,62}(?:\.[A-Za-z_]\w{1,62})?")


def _has_objects(clause: str) -> bool:
    """Whether a clause names something a rule can be about (a command, a place)."""
    ticked = _TICKED_RE.findall(clause)
    return bool(_commands(clause, ticked) or _places(clause))


def consent_condition(sentence: str) -> bool:
    """Whether a prohibition waits for someone's say-so ("never X unless the user says
    so", "nunca … sin autorización del usuario"), or a condition is the approval itself
    ("… needs request_approval first and is only paid if APPROVED", "nur wenn genehmigt"):
    then it is an approval rule, which this module reads although the sentence is a
    conditional.

    >>> consent_condition("Any payment above 10,000 EUR needs request_approval first "
    ...                   "and is only paid if APPROVED.")
    True
    >>> consent_condition("If the build fails, do not push.")
    False
    """
    low = sentence[:600].casefold()
    return bool(
        negation(low)
        and UNTIL_RE.search(low)
        and (CONSENT_RE.search(low) or ASK_RE.search(low))
    ) or bool(_APPROVED_CONDITION_RE.search(low))


def _asks_a_person(low: str, asking: re.Pattern[str] = ASK_RE) -> bool:
    """Whether lower-cased ``low`` asks someone (``asking``: :data:`ASK_RE`, or
    :data:`ASK_VERB_RE` for the verbs alone): not when each asking
    word is followed by a tool's identifier ("consulta ``ratelimit__ledger`` antes de
    enviar", "consult check_quota first": a tool is consulted, no person is asked).

    >>> _asks_a_person("consulta ratelimit__ledger antes de enviar")
    False
    >>> _asks_a_person("consulta al responsable antes de enviar")
    True
    """
    for m in asking.finditer(low):
        after = low[m.end() : m.end() + 80].lstrip(" `\"'")
        tools = _tool_names_at(after)
        if not tools or tools[0][0] != 0:
            return True
    return False


_APPROVED_CONDITION_RE = re.compile(
    r"(?<![\w])(?:if|once|when|unless|until|wenn|falls|sobald|si|sólo\s+si|solo\s+si|se|quando"
    r"|lorsque)\s+(?:it\s+is\s+|it's\s+|they\s+are\s+|sie\s+|es\s+|está\s+|il\s+est\s+)?"
    r"(?:approved|confirmed|authori[sz]ed|granted|genehmigt|freigegeben|aprobad[oa]s?"
    r"|autorizad[oa]s?|approuvée?s?|autorisée?s?|aprovad[oa]s?)(?![\w])"
)
"""A condition that is the approval itself ("if APPROVED", "sobald genehmigt")."""


def clause_rules(
    clause: str,
    *,
    until: str | None = None,
    context_namespaces: tuple[str, ...] = (),
    context_line: str = "",
    amount: tuple[tuple[str, ...], float] | None = None,
    noun_ok: bool = True,
    context_label: str | None = None,
) -> list[Rule]:
    """The rules of one clause (see the module docstring)."""
    low = clause.casefold()
    neg = negation(low) is not None
    waits = bool(BEFORE_RE.search(low) or WITHOUT_RE.search(low) or UNTIL_RE.search(low))
    # "send e-mails only after the user confirms", "nur nach Freigabe"
    waits = waits or bool(ONLY_RE.search(low) and AFTER_RE.search(low))
    # the tool that asks, named ("call request_approval … before issue_refund"), asks too
    asks = _asks_a_person(low) or any(
        DEFAULT_APPROVAL_RE.search(i) for i in _TOOL_ID_RE.findall(low)
    )
    ask = asks and waits
    # "never X unless/until the user says so": X needs that person's approval
    ask = ask or (neg and bool(UNTIL_RE.search(low)) and bool(CONSENT_RE.search(low)))
    # "any refund above 50 EUR requires approval", "X needs the user's confirmation"
    # ("… needs request_approval from the manager": the asking tool named)
    ask = ask or (asks and bool(REQUIRES_RE.search(low)) and not neg)
    # (the "only" of "read-only", 只读, "solo lectura" restricts nothing to a scope)
    only = bool(ONLY_RE.search(READ_ONLY_RE.sub(" ", low)))
    read_only = bool(READ_ONLY_RE.search(low))
    loose_ask = not (ask or neg) and _asks_a_person(low, ASK_VERB_RE)
    if not (ask or neg or only or read_only or loose_ask):
        return []
    ticked = _TICKED_RE.findall(clause)
    commands = _commands(clause, ticked)
    own_ns = _namespaces(clause)
    namespaces = own_ns or context_namespaces
    kube_verbs = _kubectl_verbs(low) if (namespaces or "kubectl" in low) else []
    places = _places(clause)
    if ask or loose_ask:
        acted = _action_part(clause)
        if acted is not None:
            # "run brand_check and request_approval before any publish": the tools named
            # ahead of "before" are the steps done first, the action is what follows
            actions = _approval_actions(
                acted,
                acted.casefold(),
                _commands(acted, _TICKED_RE.findall(acted)),
                amount=amount,
                noun_ok=noun_ok,
                concrete_only=loose_ask,
                places=_places(acted),
            )
            if actions:
                return [("require_approval_for", a) for a in actions]
        actions = _approval_actions(
            clause,
            low,
            commands,
            amount=amount,
            noun_ok=noun_ok,
            concrete_only=loose_ask,
            places=places,
        )
        return [("require_approval_for", a) for a in actions]
    out: list[Rule] = []
    if only and not (neg and not own_ns and not _paths(clause, ticked)):
        out += _only_rules(clause, low, ticked, own_ns, until)
    if neg or read_only:
        out += _prohibitions(
            clause,
            low,
            ticked,
            commands,
            namespaces,
            kube_verbs,
            read_only,
            until,
            context_line,
            context_label,
            places,
        )
    return out


_BEFORE_ACTION_RE = re.compile(
    r"(?<![\w])(?:before|prior\s+to|bevor|antes\s+de|avant\s+(?:de|d'|tout|toute)|prima\s+di"
    r"|voordat)(?![\w])"
)
"""A "before" after which the clause names its action (the languages that put it ahead of
the action: "… before any publish", "antes de publicar"; not 前に, which follows it)."""


def _action_part(clause: str) -> str | None:
    """The part of an approval clause that names the action, when the clause names tools
    ahead of its "before": in "brand_check + request_approval before any publish" the
    check and the asking are what comes first and publishing is what needs approval.
    None when nothing but the asking is named ahead of it ("call request_approval before
    issue_refund": the whole clause is read).

    >>> _action_part("brand_check + request_approval before any publish.")
    'before any publish.'
    >>> _action_part("call request_approval before issue_refund") is None
    True
    """
    m = _BEFORE_ACTION_RE.search(clause.casefold())
    if m is None or not _tool_names_at(clause[: m.start()]):
        return None
    return clause[m.start() :]


# -- objects -----------------------------------------------------------------------------


def _commands(clause: str, ticked: list[str]) -> list[tuple[str, list[str]]]:
    """(program, subcommands) named in the clause: backticked commands and known programs
    followed by their subcommand ("helm upgrade/install" → helm, [upgrade, install])."""
    out: list[tuple[str, list[str]]] = []
    # "`terraform apply` / `destroy`", "state rm / force-unlock": one program, its subcommands
    flat = _ALTERNATIVES_RE.sub("/", clause)
    for text in [flat, *ticked]:
        for m in _PROGRAM_RE.finditer(text.casefold()):
            subs = [s.strip() for s in m[2].split("/") if s.strip()]
            if not any(p == m[1] and set(subs) <= set(known) for p, known in out):
                out.append((m[1], subs))
    return out


_ALTERNATIVES_RE = re.compile(r"`?\s+/\s+`?(?=[a-z])")
_PLACE_TOKEN_RE = re.compile(
    r"`?(?<![\w@:/.`-])((?:\.{1,2}/)?[\w.-]{1,60}(?:/[\w.-]{1,60}){1,6})/?`?(?![\w/])"
)


def _places(clause: str) -> tuple[str, ...]:
    """Folders a clause scopes its action to: a path after a preposition of place ("in
    envs/prod", "en envs/prod", "dans `envs/prod`") or before ``で`` ("envs/prod で"), not
    a URL, a file or a list of subcommands ("apply/destroy")."""
    out: list[str] = []
    for m in _PLACE_TOKEN_RE.finditer(clause[:600]):
        name = m[1].removeprefix("./")
        before = clause[max(0, m.start() - 24) : m.start()].casefold()
        if not (PLACE_RE.search(before) or PLACE_AFTER_RE.match(clause[m.end() : m.end() + 8])):
            continue
        if "://" in clause[m.start() : m.end() + 3] or name.rsplit(".", 1)[-1] in _FILE_ENDINGS:
            continue
        if name not in out:
            out.append(name)
    return tuple(out)


def _namespaces(text: str) -> tuple[str, ...]:
    names: list[str] = []
    for pattern in (_NS_AFTER_RE, _NS_BEFORE_RE):
        for m in pattern.finditer(text):
            for name in _LIST_SPLIT_RE.split(m[1]):
                name = name.strip().casefold()
                if name and name not in _NOT_NAMES and name not in names and name.isascii():
                    names.append(name)
    return tuple(names)


def _kubectl_verbs(low: str) -> list[str]:
    return [v for v in matchers.KUBECTL_MUTATING if re.search(rf"(?<![\w-]){_ws(v)}(?![\w-])", low)]


def _ws(phrase: str) -> str:
    return r"\s+".join(re.escape(w) for w in phrase.split())


def _paths(clause: str, ticked: list[str]) -> list[str]:
    """Folder globs: a backticked or bare token ending in ``/`` (``services/payments/`` →
    ``services/payments/**``), or a backticked path with a ``/``."""
    out: list[str] = []
    for t in ticked:
        t = t.strip()
        if " " in t or "://" in t or "/" not in t:
            continue
        out.append(t.rstrip("/") + "/**" if t.endswith("/") else t)
    for m in _PATH_RE.finditer(clause):
        glob = m[1].rstrip("/") + "/**"
        if glob not in out and "`" not in m[1]:
            out.append(glob)
    return [g.removeprefix("./") for g in out]


def _read_only_paths(clause: str) -> list[str]:
    """The folders a clause declares read-only (:data:`READ_ONLY_RE`), named before the
    phrase: "`data/raw/` is read-only", "treat data/raw/ as read-only", "data/raw/ è in
    sola lettura" - not a folder named after it ("read-only access; write to out/").

    >>> _read_only_paths("data/raw/ is read-only; results go to out/")
    ['data/raw/**']
    >>> _read_only_paths("You have read-only access; write results to out/")
    []
    """
    m = READ_ONLY_RE.search(clause.lower())
    if m is None:
        return []
    head = clause[: m.start()]
    return _paths(head, _TICKED_RE.findall(head))


def _branch(clause: str, ticked: list[str]) -> str | None:
    """The branch a push rule names: a backticked bare name, else the word after a
    preposition next to the push ("push to main", "auf main pushen")."""
    for t in ticked:
        if re.fullmatch(r"[\w][\w./-]{0,60}", t) and "/" not in t.rstrip("/"):
            return t
    m = re.search(
        r"(?<![\w])(?:to|into|auf|nach|a|en|sur|vers|para|em|no)\s+(?:the\s+|den\s+|la\s+|el\s+|o\s+)?"
        r"(main|master|trunk|develop|production|prod|release)\b",
        clause.casefold(),
    )
    return m[1] if m else None


def _data_objects(clause: str) -> list[str]:
    """Dotted names that are tables or datasets, not hosts or files (``raw.customers``)."""
    out = []
    for m in _DOTTED_RE.finditer(clause.casefold()):
        name = m[1]
        last = name.rsplit(".", 1)[-1]
        if last in _TLDS or last in _FILE_ENDINGS:
            continue
        out.append(name)
    return out


# -- rule families -------------------------------------------------------------------------


def _approval_actions(
    clause: str,
    low: str,
    commands: list[tuple[str, list[str]]],
    *,
    amount: tuple[tuple[str, ...], float] | None = None,
    noun_ok: bool = True,
    concrete_only: bool = False,
    places: tuple[str, ...] = (),
) -> list[str]:
    """What a clause says needs approval, as matchers of what a call does: commands, SQL
    statements, sending mail, paying, a force-push, deleting files, the tools it names
    (``before issue_refund``), or the tool its amount limit is about ("refunds above 50
    EUR"). With ``concrete_only`` ("ask for destructive actions, e.g. force-push"), only
    objects a call can be recognised by, not the classes of mail and payment. A command
    scoped to ``places`` ("in envs/prod") needs approval only there."""
    out: list[str] = []
    force = bool(FORCE_RE.search(low))
    for program, subs in commands:
        if program == "git" and force and "push" in subs:
            continue
        out.append(matchers.command(program, subs, at=places if program != "git" else ()))
    if force:
        out.append(matchers.FORCE_PUSH)
    sql = _sql_kinds(clause)
    if sql:
        out.append(matchers.sql_statement(sql))
    tools = _named_tools(clause)
    if amount is not None:
        nouns, limit = amount
        if not tools and noun_ok and (_pays(low) or SPEND_RE.search(low)):
            # a spending cap, in any language: also the tools named for spending
            nouns = tuple(dict.fromkeys((*nouns, *SPEND_TOOL_VERBS)))
        if not tools and noun_ok and nouns:
            tools = [matchers.noun_tool(*nouns)]
        tools = [matchers.with_amount_above(t, limit) for t in tools]
    out += tools
    objects = [] if commands or tools else _subject_objects(clause)
    out += [matchers.names_object(o) for o in objects]
    tools = tools or objects
    if DELETE_RE.search(low) and FILE_RE.search(low):
        out.append(matchers.FILE_DELETE)
    if not concrete_only and not tools:  # the tools named are what the rule is about
        domains = [d.casefold() for d in _DOMAIN_RE.findall(clause)]
        if MAIL_RE.search(low) and domains:  # mail outside a domain
            out += [matchers.mail_outside(d) for d in domains]
        elif SEND_RE.search(low) and (MAIL_RE.search(low) or MESSAGE_RE.search(low)):
            out.append(matchers.mail_send())  # sending, not drafting
        elif MAIL_RE.search(low):
            out.append(matchers.mail_outside(None))
        if _pays(low):
            out.append(matchers.tool_verb(["book", "reserv", "pay", "purchas", "buy", "checkout"]))
            out.append(matchers.PAY_CLICK)
        if not commands and not force and PUSH_RE.search(low):
            out.append(matchers.PUSH)
        if not commands and DEPLOY_RE.search(low):
            out.append(r"\bdeploy")
        if not commands and PUBLISH_RE.search(low):
            out.append(matchers.PUBLISH)
    return list(dict.fromkeys(out))


_COPULA_BEFORE_RE = re.compile(
    r"(?<![\w])(?:is|are|was|were|be|been|being|ist|sind|war|waren|wird|werden|est[aá]n?|es|son"
    r"|fue|est|sont|été|é|são|foi)\s+(?:[^\W\d_]{2,20}\s+)?$"
)
_PARTICIPLE_FOR_RE = re.compile(
    r"(?:ed|iert|ado|ada|ados|adas|é|ée|és|ées)\s+(?:for|für|para|pour|by|von|por|par)(?![\w])"
)


def _pays(low: str) -> bool:
    """Whether a clause names booking or paying as an *action*: a word of
    :data:`PAY_RE` that is not a participle describing an object ("the partition is
    reserved for the team", "rooms booked by the office", "está reservado para"): after a
    copula, or a participle followed by "for"/"by", it says what the object is, not what
    the agent does.

    >>> _pays("never book or pay without approval"), _pays("the a100 partition is reserved for x")
    (True, False)
    """
    for m in PAY_RE.finditer(low):
        if _COPULA_BEFORE_RE.search(low[max(0, m.start() - 40) : m.start()]):
            continue
        if _PARTICIPLE_FOR_RE.match(low, m.end() - 4 if m.end() >= 4 else 0) or (
            _PARTICIPLE_FOR_RE.search(low[m.start() : m.end() + 8])
        ):
            continue
        return True
    return False


_SUBJECT_RE = re.compile(
    r"^\s*(?:(?i:the|a|an|our|your|any|all|every)\s+)?[`\"']?(?P<name>[A-Za-z0-9][\w.-]{1,62})[`\"']?"
    r"(?P<noun>\s+[^\W\d_]{2,30})?\s+(?:is|are|needs?|requires?|must|may|can|should|has|have)(?![\w])"
)


def _subject_objects(clause: str) -> list[str]:
    """The object a clause's subject names when it is written like a name, not a word:
    "the a100-res partition needs approval", "`billing-v2` requires sign-off": backticked or
    quoted, or with a digit or ``_``, or hyphenated and followed by the noun of what it is
    ("the prod-db host"). A plain word ("deployments require approval") names a class of
    actions, read elsewhere; a hyphenated word alone ("the sign-off is required") is a
    word.

    >>> _subject_objects("The a100-res partition is reserved and needs approval first")
    ['a100-res']
    >>> _subject_objects("The sign-off is required"), _subject_objects("Deployments need approval")
    ([], [])
    """
    m = _SUBJECT_RE.match(clause[:600])
    if m is None:
        return []
    name = m["name"].rstrip(".")
    quoted = clause[max(0, m.start("name") - 1) : m.start("name")] in ("`", '"', "'")
    named = quoted or any(c.isdigit() or c == "_" for c in name)
    if not named and not ("-" in name and m["noun"]):
        return []
    if DEFAULT_APPROVAL_RE.search(name) or name.casefold() in _NOT_DATA_NAMES:
        return []
    return [name]


_TOOL_ID_RE = re.compile(
    r"(?<![A-Za-z0-9_.@/:-])([a-z][a-z0-9]{1,30}(?:__?[a-z0-9]{2,30}){1,4})"
    r"(?![A-Za-z0-9_@/-]|\.\w)"
)
_SQL_WORD_RE = re.compile(
    r"(?<![\w])(INSERT|UPDATE|DELETE|DROP|ALTER|TRUNCATE|CREATE|MERGE|DDL|DML)(?![\w])"
)
_SQL_CONTEXT_RE = re.compile(
    r"(?i)\b(?:sql|quer(?:y|ies)|statements?|tables?|schemas?|databases?|db)\b"
)


# (a name is bounded by ASCII: in Japanese or Korean a particle follows it unspaced,
# ``gmail_send는``, ``submit_for_reviewを``)
_CAMEL_ID_RE = re.compile(
    r"(?<![A-Za-z0-9_.@/:-])([a-z]{2,20}(?:[A-Z][a-z0-9]{1,20}){1,4})(?![A-Za-z0-9_@/-]|\.\w)"
)


def _tool_names_at(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of each tool name in ``text``'s first 600 characters
    (snake_case, then camelCase matches): not the tool that asks (``request_approval``),
    an identifier with digits (``acct_1Stg…``) or a table (``analytics_prod.events``)."""
    head = text[:600]
    found = [*_TOOL_ID_RE.finditer(head), *_CAMEL_ID_RE.finditer(head)]
    return [
        (m.start(1), m.end(1), m[1])
        for m in found
        if not DEFAULT_APPROVAL_RE.search(m[1]) and not any(c.isdigit() for c in m[1])
    ]


_QUALIFIER_RE = re.compile(
    r"\s*[`\"']?\s+(?:with|using|mit|con|avec|com)\s+(?:(?:the\s+)?[^\W\d][\w-]{1,30}\s*[=:]?\s*)?"
    r"[`\"']([\w.-]{1,40})[`\"']"
)
"""A value a rule gives a tool right after naming it: "`x` with action `wipe`", "`x` with
`--prod`" (quoted: a value, not prose)."""


def _named_tools(clause: str) -> list[str]:
    """Matchers of the tools a clause names (:func:`matchers.tool_named`), each narrowed to
    the argument value the clause gives it (:data:`_QUALIFIER_RE`:
    :func:`matchers.with_value`): a rule about ``intune_device_action`` with action
    ``wipe`` is not broken by a ``retire``.

    >>> [bool(re.search(p, "intune_device_action retire 7e27")) for p in
    ...  _named_tools("`intune_device_action` with action `wipe` only after approval")]
    [False]
    """
    out: list[str] = []
    for _, end, name in _tool_names_at(clause):
        matcher = matchers.tool_named(name)
        if matcher is None:
            continue
        qualifier = _QUALIFIER_RE.match(clause, end)
        if qualifier is not None:
            matcher = matchers.with_value(matcher, qualifier[1])
        if matcher not in out:
            out.append(matcher)
    return out


def _tool_identifiers(text: str) -> list[str]:
    """Tool names a sentence names (``issue_refund``, ``gmail_send``), each once
    (:func:`_tool_names_at`)."""
    return list(dict.fromkeys(name for _, _, name in _tool_names_at(text)))


def names_sql(sentence: str) -> bool:
    """Whether a sentence names SQL statements the way prose does, in capitals ("never
    run DELETE, UPDATE or MERGE on …")."""
    return len(_sql_kinds(sentence[:600])) >= 2


def _sql_kinds(clause: str) -> tuple[str, ...]:
    """The SQL statements a clause names in capitals (``INSERT/UPDATE/DELETE/DDL``), the
    way people write SQL in prose; in a clause written all in capitals ("NEVER DELETE
    FILES") two of them, or one with a word of SQL, are needed."""
    words = _SQL_WORD_RE.findall(clause)
    if not words:
        return ()
    letters = [w for w in re.findall(r"[^\W\d_]{2,}", clause)]
    shouting = letters and sum(w.isupper() for w in letters) > 0.6 * len(letters)
    if shouting and len(set(words)) < 2 and not _SQL_CONTEXT_RE.search(clause):
        return ()
    kinds: list[str] = []
    for w in words:
        w = w.lower()
        for k in matchers.SQL_DDL if w == "ddl" else matchers.SQL_DML if w == "dml" else (w,):
            if k not in kinds:
                kinds.append(k)
    return tuple(kinds)


_GENERIC_NOUNS = frozenset(
    ["anything", "something", "everything", "amount", "amounts", "sum", "sums", "value", "total"]
)
_BEFORE_VERB_RE = re.compile(
    r"\b(?:before|prior\s+to)\s+(?:you\s+|we\s+|the\s+agent\s+)?(?:can\s+|may\s+)?"
    r"([a-z]{3,20}?)(?:ing)?\b",
    re.IGNORECASE,
)


_HEAD_NOUN_RE = re.compile(
    r"([^\W\d_]{3,40})\s+(?:with|of|in|at|mit|von|con|de|avec|com)\s+(?:(?:an?|the|einem|un|una|um|uma)\s+)?$",
    re.IGNORECASE,
)
"""The noun a limited noun belongs to ("order with notional above …": order)."""


def _stem(noun: str) -> str:
    """A noun as tool names carry it: ``refunds`` → ``refund``, ``booking`` → ``book``."""
    if len(noun) > 6 and noun.endswith("ing"):
        return noun[:-3]
    return re.sub(r"(?:es|s)$", "", noun) if len(noun) > 4 else noun


def _limit(number: str) -> float | None:
    """An amount as a rule writes it, as a number: thousands grouped by commas
    ("1,000.50") or by dots ("5.000 €", "1.250,50 EUR": a price has no third decimal, so
    "5.000" is five thousand), a decimal comma or point; None when it is none.

    >>> _limit("1,000.50"), _limit("5.000"), _limit("1.250,50"), _limit("250")
    (1000.5, 5000.0, 1250.5, 250.0)
    """
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", number):
        number = number.replace(",", "")
    elif re.fullmatch(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?", number):
        number = number.replace(".", "")
    try:
        return float(number.replace(",", "."))
    except ValueError:
        return None


def _amount(sentence: str) -> tuple[tuple[str, ...], float] | None:
    """The amount limit a sentence states: (the nouns it is about, stems — the limited
    noun and the one it belongs to, "order with notional"; the limit)."""
    m = AMOUNT_RE.search(sentence[:600])
    if not m:
        return None
    at_least = m["n2"] is not None  # "N or more": N itself is over the limit
    noun = (m["noun"] or m["noun2"] or "").casefold()
    if noun in _NOT_NAMES or noun in ("any", "all", "each", "every", "jede", "cualquier"):
        noun = ""
    if noun in _GENERIC_NOUNS:
        # "anything over €50 needs sign-off before you refund it": the action after before
        after = _BEFORE_VERB_RE.search(sentence[m.end() : 600])
        noun = after[1].casefold() if after else ""
    nouns = [noun] if len(noun) >= 3 else []
    start = m.start("noun") if m["noun"] else m.start("noun2") if m["noun2"] else -1
    owner = _HEAD_NOUN_RE.search(sentence[max(0, start - 60) : start]) if start > 0 else None
    if owner and owner[1].casefold() not in _NOT_DATA_NAMES:
        nouns.append(owner[1].casefold())
    limit = _limit(m["n2"] if at_least else m["n"] or m["n3"])
    if limit is None:
        return None
    return tuple(dict.fromkeys(_stem(n) for n in nouns)), limit - 0.01 if at_least else limit


_NOT_DATA_NAMES = _NOT_NAMES | frozenset(
    [
        "on",
        "into",
        "from",
        "at",
        "auf",
        "sur",
        "dans",
        "this",
        "that",
        "these",
        "those",
        "it",
        "any",
        "all",
        "each",
        "every",
        "our",
        "their",
        "its",
        "my",
        "is",
        "be",
        "for",
        "agents",
        "agent",
        "read",
        "only",
        "write",
        "production",
        "prod",
        "data",
        "main",
        "new",
        "same",
        "other",
        "ist",
        "es",
        "est",
        "é",
        "und",
        "y",
        "et",
    ]
)
_DATA_WORD_RE = re.compile(
    r"(?i)schemas?|databases?|db|tables?|datasets?|buckets?|esquemas?|tablas?|tabelas?|tabellen?"
    r"|schémas?|datenbank(?:en)?"
)
_DATA_BEFORE_RE = re.compile(
    r"[`\"']?([A-Za-z_][\w.]{1,62})[`\"']?\s+(?:schemas?|databases?|db|tables?|datasets?|buckets?)\b",
    re.IGNORECASE,
)
_DATA_AFTER_RE = re.compile(
    r"\b(?:schemas?|databases?|db|tables?|datasets?|buckets?|esquemas?|tablas?|tabelas?"
    r"|tabellen?|schémas?|datenbank(?:en)?)\s+[`\"']?([A-Za-z_][\w.]{1,62})",
    re.IGNORECASE,
)
_READ_ONLY_NAME_RE = re.compile(
    r"[`\"']?([A-Za-z_][\w.]{1,62})[`\"']?\s+(?:is|are|ist|sind|es|son|est|sont|é|são)\s+"
    r"(?:\w+\s+){0,2}?(?:read[\s-]?only|schreibgeschützt|nur\s+lesend|de\s+solo\s+lectura"
    r"|en\s+lecture\s+seule|somente\s+leitura)",
    re.IGNORECASE,
)
_DATA_NOUN = (
    r"(?:schemas?|databases?|db|tables?|datasets?|buckets?|esquemas?|tablas?|tabelas?"
    r"|tabellen?|schémas?|datenbank(?:en)?)"
)
_ONLY_TO_RE = re.compile(
    r"(?:only|nur|solo|s[oó]lo|únicamente|uniquement|seulement|somente|apenas)\s+"
    r"(?:to|in|into|nach|in|en|a|dans|em|no|na)\s+"
    # the noun that says what the name is ("only to schema scratch", "nur in das Schema x")
    r"(?:(?:the|das|die|den|el|la|le|o)\s+)?(?:(?:schema|database|dataset|table|esquema|schéma"
    r"|tabla|tabela|tabelle|datenbank)s?\s+)?"
    r"[`\"']?([A-Za-z_][\w.]{1,62})",
    re.IGNORECASE,
)
_TARGETS_RE = re.compile(
    r"(?<![\w])(?:on|in|into|to|against|auf|in|en|sobre|sur|dans|em|no|na|nos|nas)\s+"
    rf"(?:(?:the|den|die|das|el|los|la|las|le|les|o|os|a|as)\s+)?(?:{_DATA_NOUN}\s+)?"
    r"([`\"']?[A-Za-z_][\w.]{1,62}[`\"']?(?:\s*(?:,|\bor\b|\band\b|\boder\b|\bund\b|\bo\b|\by\b"
    r"|\bou\b|\bet\b|\be\b)\s*[`\"']?[A-Za-z_][\w.]{1,62}[`\"']?){0,7})",
    re.IGNORECASE,
)
"""The tables or schemas SQL statements named in capitals are about ("never run DELETE or
DROP on analytics, staging or raw")."""


def _named_data(clause: str, *, with_noun: bool = True) -> list[str]:
    """Tables and schemas a clause names: next to a word for them ("schema analytics_prod",
    "the warehouse schema"), said to be read-only, or dotted (``raw.customers``)."""
    out: list[str] = []
    patterns = [_READ_ONLY_NAME_RE]
    if with_noun:
        patterns += [_DATA_AFTER_RE, _DATA_BEFORE_RE]
    for pattern in patterns:
        for m in pattern.finditer(clause[:600]):
            name = m[1].rstrip(".")
            if name.casefold() in _NOT_DATA_NAMES or _DATA_WORD_RE.fullmatch(name):
                continue
            if name not in out:
                out.append(name)
    for name in _data_objects(clause):
        if name not in out:
            out.append(name)
    return out


def _forbid(action: str, within: str | None, until: str | None) -> Rule:
    """A ``forbidden_actions`` entry: ``action``, kept by a call matching ``within``."""
    value: dict[str, str] = {"action": action}
    if within:
        value["within"] = within
    if until:
        value["until"] = until
    return ("forbidden_actions", value)


def _prohibitions(
    clause: str,
    low: str,
    ticked: list[str],
    commands: list[tuple[str, list[str]]],
    namespaces: tuple[str, ...],
    kube_verbs: list[str],
    read_only: bool,
    until: str | None,
    context_line: str = "",
    context_label: str | None = None,
    places: tuple[str, ...] = (),
) -> list[Rule]:
    out: list[Rule] = []
    out += [_forbid(a, None, until) for a in _examples(clause, commands)]
    out += _data_writes(clause, low, read_only, until, context_line, context_label)
    out += _clicks(clause, low, until)
    pushes = bool(PUSH_RE.search(low))
    if pushes:
        branch = _branch(clause, ticked)
        if branch:
            out.append(_forbid(matchers.push_to(branch), matchers.PUSH, until))
    for program, subs in commands:
        if program == "git" and pushes and out:
            continue
        ns = namespaces if program in ("kubectl", "helm") else ()
        out.append(
            _forbid(
                matchers.command(
                    program, subs, namespaces=ns, at=places if program != "git" else ()
                ),
                matchers.command(program),
                until,
            )
        )
    verbs = list(kube_verbs)
    if read_only and namespaces and not verbs:
        verbs = list(matchers.KUBECTL_MUTATING)
    verbs = [v for v in verbs if not any(p == "kubectl" and v in s for p, s in commands)]
    if verbs and namespaces:
        out.append(
            _forbid(
                matchers.command("kubectl", verbs, namespaces=namespaces),
                matchers.command("kubectl"),
                until,
            )
        )
    if MIGRATION_RE.search(low):
        out.append(_forbid(matchers.MIGRATION, matchers.DB_CALL, until))
    if DATABASE_RE.search(low) and MODIFY_RE.search(low) and not _exceptions(clause):
        out.append(_forbid(matchers.SQL_WRITE, matchers.DB_CALL, until))
    if (READ_RE.search(low) or MODIFY_RE.search(low)) and not read_only:
        for name in _data_objects(clause):
            out.append(_forbid(rf"(?i)\b{re.escape(name)}\b", matchers.DB_CALL, until))
    if MODIFY_RE.search(low):
        out += [("forbidden_write_paths", g) for g in _paths(clause, ticked)]
    elif read_only:
        out += [("forbidden_write_paths", g) for g in _read_only_paths(clause)]
    out += [_forbid(matchers.tool_call(name), None, until) for name in _forbidden_tools(clause)]
    if not out and _deletes_files(low):
        out.append(_forbid(matchers.FILE_DELETE, None, until))
    return out


_WHOLE_RE = re.compile(
    r"(?:anything|everything|nothing|any|all|alles|nichts|nada|todo|rien|tout|tudo|什么|何も)"
)
_GLUE_WORDS = frozenset(
    [
        "or",
        "and",
        "nor",
        "ni",
        "oder",
        "und",
        "ou",
        "o",
        "y",
        "e",
        "et",
        "never",
        "not",
        "overwrite",
        "overwriting",
        "overwritten",
        "sobrescribas",
        "sobrescribir",
        "überschreiben",
        "écraser",
        "sobrescrever",
    ]
)


def _deletes_files(low: str) -> bool:
    """Whether a prohibition forbids deleting files anywhere: its deleting verb's object,
    up to the next punctuation, is files, a whole ("anything", "nada") or nothing at all
    ("never delete or overwrite anything", "nunca borres ni sobrescribas archivos",
    "削除や上書きは絶対にしないこと"). Another object ("the comments in the code") or a
    place ("files in the home folder") is another rule's.

    >>> [_deletes_files(t) for t in ("never delete or overwrite anything; move files",
    ...     "削除や上書きは絶対にしないこと", "do not delete the comments in the code",
    ...     "never delete files in the home folder")]
    [True, True, False, False]
    """
    m = DELETE_RE.search(low)
    if m is None:
        return False
    if not m[0].isascii():  # Japanese, Chinese: the object comes before the verb
        before = low[max(0, m.start() - 12) : m.start()]
        return m.start() == 0 or before[-1:] in "、。 ,:：" or bool(FILE_RE.search(before))
    object_words = re.split(r"[;,.:!?()]", low[m.end() : m.end() + 80], maxsplit=1)[0].split()
    return all(
        w in _GLUE_WORDS or _WHOLE_RE.fullmatch(w) or FILE_RE.fullmatch(w) for w in object_words
    )


_NEG_ANY_CASE_RE = re.compile(NEG_RE.pattern, re.IGNORECASE)
"""A negation in the clause as written (offsets into it, whatever its case)."""
_GLUE_RE = re.compile(r"(?:[\s,/、]|\b(?:or|and|nor|ni|oder|und|ou|o|y|e|et|the|a|an|la|le|el)\b)*")
"""What may stand between two tools of one list ("``a``, ``b`` or the ``c``")."""


_CLOSING_TAIL = 12
"""Characters a clause may hold after a negation that closes it (``ください``, ``allowed``)."""
_CLOSING_REACH = 48
"""Characters between a tool and the closing negation that governs it (``や production
への昇格はフリーズ解除まで``: the rest of the list and the time it holds for)."""


def _forbidden_tools(clause: str) -> list[str]:
    """The tools a negation governs ("never call ``social_publish`` or
    ``social_schedule``", "rufe niemals ``delete_user`` auf", "nunca llames a ``x``"): the
    first tool named at most three words after a negation, with no punctuation between,
    and the tools listed right after it. A tool's name is written the same in every
    language; a negation elsewhere in the clause ("if no tool call is needed, use
    ``final_answer``") does not reach it, nor does one before "unless"/"without" (the
    tool asked for).

    >>> _forbidden_tools("never call social_publish or social_schedule: a human publishes")
    ['social_publish', 'social_schedule']
    >>> _forbidden_tools("if no tool call is needed, use final_answer to return the answer")
    []

    In a language that puts the verb last, the negation closing the clause governs the
    tools before it ("``submit_for_review`` や production への昇格は禁止").

    >>> _forbidden_tools("submit_for_review や production への昇格はフリーズ解除まで禁止")
    ['submit_for_review']
    >>> _forbidden_tools("call final_answer when done, do not loop")
    []
    """
    head = clause[:600]
    found = list(_NEG_ANY_CASE_RE.finditer(head))
    negations = [m.end() for m in found]
    # a negation that ends the clause (a verb-final one: "… は禁止", "… を実行しないで
    # ください", "… is not allowed") governs the tools named before it
    closing = [m.start() for m in found if len(head[m.end() :].strip()) <= _CLOSING_TAIL]
    out: list[str] = []
    end = -1
    for start, stop, name in sorted(_tool_names_at(head)):
        governed = any(
            n <= start
            and len(head[n:start].split()) <= 3
            and not re.search(r"[,;:.!?]|\b(?:unless|without|except)\b", head[n:start])
            for n in negations
        ) or any(
            stop <= n
            and n - stop <= _CLOSING_REACH
            # (a full-width comma ends a clause as a comma does: "用 safe__propose_tx（…），
            # 不得直接转账" forbids the direct transfer, not the tool)
            and not re.search(r"[,;:.!?。；：，]|\b(?:unless|without|except|only)\b", head[stop:n])
            for n in closing
        )
        listed = end >= 0 and _GLUE_RE.fullmatch(head[end:start]) is not None
        if governed or listed:
            if name not in out:
                out.append(name)
            end = stop
        elif out:
            break
    return out


_EXAMPLES_RE = re.compile(
    r"\((?:e\.\s?g\.|eg|i\.\s?e\.|z\.\s?b\.|p\.\s?ej\.|p\.\s?ex\.|ex\.|por\s+ejemplo"
    r"|par\s+exemple|por\s+exemplo|etwa|like|such\s+as|例えば|如)?[,:]?\s*([^()]{2,160})\)",
    re.IGNORECASE,
)
_FRAGMENT_RE = re.compile(
    r"[a-z][a-z0-9]{0,30}(?:-[a-z0-9]{1,30}){0,3}(?:\s+-{0,2}[a-z][\w-]{0,30}){0,2}"
)
_EXAMPLE_SPLIT_RE = re.compile(r"\s*(?:/|,|、|;|\bor\b|\boder\b|\bou\b|\bo\b|\bnor\b)\s*")


def _examples(clause: str, commands: list[tuple[str, list[str]]]) -> list[str]:
    """Commands a prohibition gives as examples in parentheses ("never touch the state by
    hand (no `state rm` / `force-unlock`)", "(kein rm -rf, kein git clean)"): each a
    command fragment — two or three words, or a hyphenated word — backticked or after a
    negation in the parentheses, searched as words."""
    out: list[str] = []
    programs = {p for p, _ in commands}
    for m in _EXAMPLES_RE.finditer(clause[:600]):
        ticked = {" ".join(t.casefold().split()) for t in _TICKED_RE.findall(m[1])}
        negated = bool(NEG_RE.match(m[1].lstrip("`").casefold()))
        inner = NEG_RE.sub(" / ", m[1].replace("`", " ").casefold())
        for part in _EXAMPLE_SPLIT_RE.split(inner):
            words = part.split()
            while words and words[0] in _NOT_NAMES:
                del words[0]  # "pas de drop-db": the command after the article
            part = " ".join(words)
            if not _FRAGMENT_RE.fullmatch(part) or part.split()[0] in programs:
                continue
            if not (negated or part in ticked):
                continue  # "(e.g. .env files, api-keys)": examples of a thing, not commands
            if " " not in part and "-" not in part:
                continue  # one plain word ("no tests") is not a command
            words = r"\s+".join(re.escape(w) for w in part.split())
            action = rf"(?<![\w-]){words}(?![\w-])"
            if action not in out:
                out.append(action)
    return out


_WRITE_TO_RE = re.compile(
    r"(?i:writ\w*|modif\w*|chang\w*|alter\w*|touch\w*|updat\w*)\s+(?:(?i:to|into|in|on)\s+)?"
    r"[`\"']?([A-Za-z_][\w.]{2,62}?)[`\"']?(?=[\s.,;:!)]|$)"
)


def _data_writes(
    clause: str,
    low: str,
    read_only: bool,
    until: str | None,
    context_line: str,
    context_label: str | None = None,
) -> list[Rule]:
    """Writes forbidden to named tables: "schema analytics_prod is READ-ONLY", "no
    INSERT/UPDATE/DELETE there", "NEVER TRUNCATE or DROP": a SQL statement of those kinds
    whose target is the table (any table when none is named and the statements are)."""
    kinds = _sql_kinds(clause)
    if not (read_only or kinds or MODIFY_RE.search(low)):
        return []
    spared = _exceptions(clause)
    if spared:
        # "the warehouse is read-only, except schema scratch_kim": a SQL write elsewhere;
        # "analytics_prod and raw are read-only except …": writes to those named
        named = _named_data(clause[: clause.find(spared[0])])
        names = [n for n in named if ("_" in n or "." in n) and n not in spared]
        if not names:
            return [_forbid(matchers.sql_statement(kinds, outside=spared), matchers.DB_CALL, until)]
        return [
            _forbid(matchers.sql_statement(kinds, target=name), matchers.DB_CALL, until)
            for name in names
        ]
    names = _named_data(clause)
    if not names and THERE_RE.search(low) and context_line:
        names = _named_data(context_line)
    if not names and MODIFY_RE.search(low):
        # "don't write to analytics_prod": an identifier (not a path) after the verb
        names = [
            m[1]
            for m in _WRITE_TO_RE.finditer(clause)
            if "_" in m[1] and m[1].rsplit(".", 1)[-1].casefold() not in _FILE_ENDINGS
        ]
    if not names and read_only and context_label:
        names = [context_label]  # "analytics_prod: read only until …"
    if not names and kinds:
        names = _statement_targets(clause)  # "no DELETE or DROP on analytics or raw"
    if not names:
        # statements named, no table: those statements anywhere ("NEVER TRUNCATE or DROP")
        return [_forbid(matchers.sql_statement(kinds), matchers.DB_CALL, until)] if kinds else []
    return [
        _forbid(matchers.sql_statement(kinds, target=name), matchers.DB_CALL, until)
        for name in names
    ]


_EXCEPT_NAMES_RE = re.compile(
    r"\s*(?:(?:for|in|to|of|the|für|dem|der|den|das|des|de|del|en|el|la|le|les|dans|em|o|a|do|da"
    r"|du|los|las)\s+){0,2}"
    rf"(?:{_DATA_NOUN}\s+)?[`\"']?([A-Za-z_][\w.]{{1,62}})[`\"']?"
    r"(?:\s*(?:,|\band\b|\bor\b|\bund\b|\boder\b|\by\b|\bo\b|\bet\b|\bou\b|\be\b)\s*"
    r"[`\"']?([A-Za-z_][\w.]{1,62})[`\"']?)?",
    re.IGNORECASE,
)


def _exceptions(clause: str) -> list[str]:
    """The tables or schemas a clause excepts from its scope ("read-only except schema
    scratch_kim", "nur lesend, außer `sandbox`", "…以外"): named after the word (before it,
    in Japanese and Chinese). Only names that look like identifiers (a ``_``, a ``.`` or
    ticks) or that follow a word for a table or schema."""
    m = EXCEPT_RE.search(clause[:600])
    if not m:
        return []
    if m[0] in ("以外", "を除いて", "を除き"):  # after the name
        before = clause[max(0, m.start() - 64) : m.start()]
        found = re.findall(r"[`\"']?([A-Za-z_][\w.]{1,62})[`\"']?\s*$", before)
    else:
        after = _EXCEPT_NAMES_RE.match(clause, m.end())
        found = [g for g in (after.groups() if after else ()) if g]
    out = []
    for name in found:
        name = name.rstrip(".")
        if name.casefold() in _NOT_DATA_NAMES or _DATA_WORD_RE.fullmatch(name):
            continue
        if "_" in name or "." in name or DATA_NOUN_RE.search(clause[m.end() : m.end() + 40]):
            out.append(name)
    return out


_TARGET_SPLIT_RE = re.compile(
    r"\s*(?:,|、|\band\b|\bund\b|\by\b|\be\b|\bet\b|\bor\b|\bo\b|\boder\b|\bou\b)\s*"
)


def _statement_targets(clause: str) -> list[str]:
    """The names after a preposition in a clause that names SQL statements in capitals
    ("DELETE, UPDATE or DROP on analytics, staging or raw": analytics, staging, raw)."""
    out: list[str] = []
    for m in _TARGETS_RE.finditer(clause[:600]):
        if _SQL_WORD_RE.search(m[1]):
            continue  # the statements themselves ("CREATE OR REPLACE")
        names = [n.strip("`\"' .") for n in _TARGET_SPLIT_RE.split(m[1])]
        names = [
            n
            for n in names
            if n and n.casefold() not in _NOT_DATA_NAMES and not _DATA_WORD_RE.fullmatch(n)
        ]
        noun = bool(DATA_NOUN_RE.search(m[0].casefold()))
        # a plain word alone ("in queries") is not a schema; a list, an identifier is
        if len(names) < 2 and not noun:
            names = [n for n in names if "_" in n or "." in n or "`" in m[1]]
        out += [n for n in names if n not in out]
    return out


_BUTTON_RE = re.compile(
    r"(?:\bon\s+|\bthe\s+|\bauf\s+(?:den\s+)?|\ben\s+(?:el\s+)?)?"
    r"((?:[A-Z][\w'-]{0,20}\s+){0,3}[A-Z][\w'-]{0,20})\s+(?:button|Button|Schaltfläche|botón|bouton|botão)"
)
_SINGLE_QUOTED_RE = re.compile(r"(?<![\w])'([^'\n]{1,40}?)'(?![\w])")
_CLICK_LABEL_RE = re.compile(
    r"(?i:click|press|tap|hit)\w*\s+(?:(?i:on)\s+)?(?:(?i:the)\s+)?"
    r"((?:[A-Z][\w'-]{0,20}\s+){0,2}[A-Z][\w'-]{0,20})(?![\w])"
)
_QUOTED_LABEL_RE = re.compile(r"[\"“”„«「『]([^\"“”„«»「」『』\n]{1,60})[\"“”»」』]")


def _clicks(clause: str, low: str, until: str | None) -> list[Rule]:
    """Buttons not to press: a click verb and quoted labels ("never click "Place order"")."""
    if not CLICK_RE.search(low):
        return []
    labels = [m[1].strip() for m in _QUOTED_LABEL_RE.finditer(clause) if m[1].strip()]
    labels += [m[1].strip() for m in _SINGLE_QUOTED_RE.finditer(clause) if m[1].strip()]
    if not labels:  # "never click the Place Order button": the capitalised words before it
        labels = [m[1] for m in _BUTTON_RE.finditer(clause)]
    if not labels:  # "do not click Pay": the capitalised words after the verb
        labels = [m[1].strip() for m in _CLICK_LABEL_RE.finditer(clause)]
    return [_forbid(matchers.click_on(label), matchers.CLICK, until) for label in labels]


def _only_rules(
    clause: str, low: str, ticked: list[str], namespaces: tuple[str, ...], until: str | None
) -> list[Rule]:
    out: list[Rule] = []
    if MODIFY_RE.search(low):
        paths = _paths(clause, ticked)
        out += [("allowed_write_paths", g) for g in paths]
        if namespaces and not paths:
            out.append(
                _forbid(
                    matchers.command(
                        "kubectl", matchers.KUBECTL_MUTATING, except_namespaces=namespaces
                    ),
                    matchers.command("kubectl"),
                    until,
                )
            )
    if MODIFY_RE.search(low) and not _paths(clause, ticked) and not namespaces:
        # "write intermediate tables only to scratch_bia": a SQL write elsewhere breaks it
        for m in _ONLY_TO_RE.finditer(clause):
            name = m[1].rstrip(".")
            if name.casefold() in _NOT_DATA_NAMES or "/" in name:
                continue
            if DATA_NOUN_RE.search(low) or "_" in name or "." in name:
                out.append(
                    _forbid(matchers.sql_statement(outside=name), matchers.sql_statement(), until)
                )
    out += [_forbid(*family) for family in _tool_families(clause)]
    typed_ids = [m[1] for m in _TYPED_ID_RE.finditer(clause)]
    if not typed_ids and not MODIFY_RE.search(low):
        typed_ids = _named_values(clause)
    for typed_id in typed_ids:
        typed = matchers.identifier_other_than(typed_id)
        if typed:
            out.append(_forbid(typed[0], typed[1], until))
    return out


def _tool_families(clause: str) -> list[tuple[str, str, None]]:
    """ "Drafts only (``cms_create_draft`` / ``social_create_draft``)": the tools an
    only-clause names allow, among the tools of their family (the same first word of
    the name), only themselves: ``(another tool of the family, any tool of it, no
    time bound)`` for :func:`_forbid`. A call of ``social_publish`` breaks it; tools of
    other families are not the clause's to judge.

    >>> action, _, _ = _tool_families("create DRAFTS only (cms_create_draft)")[0]
    >>> [bool(re.search(action, t)) for t in ("cms_publish x", "cms_create_draft x", "bash x")]
    [True, False, False]
    """
    families: dict[str, list[str]] = {}
    for name in _tool_identifiers(clause):
        family, _, rest = name.partition("_")
        if rest and not rest.startswith("_"):
            families.setdefault(family, []).append(rest)
    out: list[tuple[str, str, None]] = []
    for family, rests in families.items():
        allowed = "|".join(re.escape(r) for r in rests)
        head = rf"(?i)^(?:[\w.:-]*?__)?{re.escape(family)}_"
        out.append((rf"{head}(?!(?:{allowed})(?![\w-]))[\w-]", rf"{head}[\w-]", None))
    return out


_ONLY_NAMED_RE = re.compile(
    r"(?<![\w])(?i:only|exclusively)\s+(?i:to|in|on|into|against)\s+"
    r"(?P<noun>[a-z][a-z]{2,30})\s+[`\"']?(?P<value>[A-Za-z0-9][\w.-]{0,62}[\w])[`\"']?(?![\w-])"
)


def _named_values(clause: str) -> list[str]:
    """ "submit only to partition dev": the value of a named setting a scope allows (a noun
    with no article, then a name: "the team channel" is a noun phrase), as the long flag a
    CLI spells it with (``--partition dev``), for
    :func:`features.policy.matchers.identifier_other_than`. Short flags (``-p``) are the
    CLI's own abbreviations and are not known.

    >>> _named_values("Submit only to partition dev with at most 2 GPUs per job")
    ['--partition dev']
    """
    out = []
    for m in _ONLY_NAMED_RE.finditer(clause[:600]):
        noun = m["noun"]
        if noun in _NOT_DATA_NAMES or m["value"].casefold() in _NOT_DATA_NAMES:
            continue
        out.append(f"--{noun} {m['value']}")
    return out
