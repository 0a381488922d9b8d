"""Rules from the instructions: the sentences of a system prompt or ``AGENTS.md`` /
``CLAUDE.md`` that state a rule, compiled into a policy mapping (the format of
:mod:`features.policy.format`).

Most agents run under rules written as sentences ("never modify anything under tests/",
"ask for approval before any git push", "never run rm -rf", "run the tests before
committing", "only fetch from pypi.org"), not under a policy file. :func:`derive` reads
the common shapes with a small grammar over normalised clauses and returns the rules,
each citing its sentence, plus the directive sentences it could not use (questions,
conditionals, rules of a shape it does not know), so a person sees what was understood.

Grammar (over one clause: lower case, quotes and markdown marks dropped, ``don't`` →
``do not``; a sentence is split into clauses at ``,``/``;`` where a new directive starts):

====================================================  ==============================
clause                                                rule
====================================================  ==============================
NEG {modify, edit, write to, change, touch, delete,   ``forbidden_write_paths``
remove, overwrite} [anything/files] [under/in] PATH…  (``tests/`` → ``tests/**``)
NEG {run, execute, use} COMMAND (backticked, or a     ``forbidden_commands``
known program, or words with a ``-flag``); NEG VERB
for the actions below (``never force-push``)
NEG {access, contact, fetch/download from, connect    ``denied_egress_hosts``
to, upload/send to, visit} HOST…
only {fetch, download, install, access, connect to,   ``allowed_egress_hosts``
use …} [from/to] HOST…; ``network access only to``
{ask, get, obtain, request, seek, wait} [for] …       ``require_approval_for``
{approval, permission, confirmation, consent} before
ACTION; NEG ACTION without {approval, permission,
asking}; ACTION only after/with approval
[always] run the {tests, test suite, linter, …}       ``[[require_before]]``
before ACTION; NEG ACTION {without running, before
running, unless … pass} the tests
====================================================  ==============================

NEG is ``never``, ``do not``, ``must not``, ``should not``, ``may not``, ``cannot``,
``avoid``, ``(you are) not allowed to``, ``it is forbidden to``. An ACTION is a backticked
command or one of the verbs of :data:`ACTIONS` (``push``/``pushing``, ``force-push``,
``commit``, ``deploy``, ``merge``, ``release``/``publish``, ``delete the branch`` …).

Not rules: sentences without a directive ("tests/ contains the tests"), questions,
conditionals ("if the build fails, do not push": the condition cannot be represented)
and a negation without a verb continuing what a subject gets ("personal devices get
`retire`, never `wipe`": it holds for those devices only)
— all but the first are reported as not used, with the reason. Pure: no I/O, no wall clock;
linear in the text and bounded (:data:`MAX_CHARS` examined).

The patterns derived here are searched, unanchored, in every tool call of the session (up
to ``features.text.clip.MAX_ANALYSED_CHARS`` of it), so each does a bounded amount of work per
position: no ``\\S*``/``\\w*``/``.*`` run that can restart at every character of a long
word or line, and a program and its argument (``mvn … test``, ``git push … --force``,
``git push … main``) at most 16 words apart. (``\\S*gradlew?\\s+(?:\\S+\\s+)*?test`` cost
3 s on a 64 KB word; a fuzzed session whose instructions said "run the tests before
committing" found it.)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from features.policy.masking import masking_rule
from features.policy.scope import named_scope, states_scope
from features.policy.structured import (
    consent_condition,
    names_sql,
    sentence_rules,
    time_bound,
)

__all__ = [
    "ACTIONS",
    "MAX_CHARS",
    "Derivation",
    "DerivedRule",
    "derive",
    "derived_policy_id",
    "to_toml",
]

MAX_CHARS = 16_384
"""Instruction text examined (system prompts and AGENTS.md files are a few KB)."""

MAX_SENTENCES = 400
"""Sentences examined; the rest are counted as not read."""

# -- vocabulary ---------------------------------------------------------------------------

_NEG = (
    r"(?:(?:(?:must|should|shall|will|may|can)\s+)?never|do\s+not|does\s+not|must\s+not"
    r"|should\s+not|shall\s+not|may\s+not|cannot|can\s+not|avoid|please\s+do\s+not|under\s+no\s+circumstances\s+(?:should\s+you\s+)?|"
    r"(?:you\s+are\s+|you're\s+|it\s+is\s+|is\s+)?(?:not\s+(?:allowed|permitted)|forbidden|"
    r"prohibited)\s+to|no\s+one\s+may)"
)
_SUBJECT = r"(?:(?:you|we|the\s+agent|agents)\s+)?"
_EVER = r"(?:\s+(?:ever|directly|manually|yourself))?"

ACTIONS: tuple[tuple[str, str], ...] = (
    # (verb phrase regex over the clause, command regex of the policy)
    (
        r"force[\s-]?push(?:es|ed|ing)?|push(?:ing)?\s+(?:with\s+)?--force",
        r"git\s+push\s+(?:\S+\s+){0,16}?(?:-f|--force)",
    ),
    (
        r"(?:git\s+)?push(?:es|ed|ing)?(?:\s+(?:to|code|changes|commits|the\s+branch)\b)?",
        r"git\s+push",
    ),
    (r"(?:git\s+)?commit(?:s|ted|ting)?", r"git\s+commit"),
    (r"deploy(?:s|ed|ing|ment|ments)?", r"\bdeploy"),
    (r"(?:git\s+)?merg(?:e|es|ed|ing)", r"git\s+merge|gh\s+pr\s+merge"),
    (r"(?:git\s+)?rebas(?:e|es|ed|ing)", r"git\s+rebase"),
    (
        r"(?:cut(?:ting)?\s+a\s+)?releas(?:e|es|ed|ing)|publish(?:es|ed|ing)?",
        r"gh\s+release|npm\s+publish|twine\s+upload|cargo\s+publish|\bpublish\b",
    ),
    (r"(?:open(?:ing)?|creat(?:e|ing))\s+(?:a\s+)?(?:pr|pull\s+request)s?", r"gh\s+pr\s+create"),
    (
        r"delet(?:e|ing)\s+(?:a\s+|the\s+|any\s+)?branch(?:es)?",
        r"git\s+branch\s+-[dD]|git\s+push\s+\S+\s+--delete",
    ),
)
"""Actions named by a verb, and the command text they are."""

_TESTS = (
    r"(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|go\s+test|cargo\s+(?:test|nextest)"
    r"|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test|make\s+(?:test|check)|\bmvn\w*\s+(?:\S+\s+){0,16}?test"
    r"|gradlew?\s+(?:\S+\s+){0,16}?test|rspec|phpunit|dotnet\s+test|mix\s+test|rake\s+test)"
)
_CHECKS: tuple[tuple[str, str], ...] = (
    (
        r"(?:unit\s+|integration\s+|all\s+(?:the\s+)?|full\s+)?tests?(?:\s+suite)?|test\s+suite|testsuite|specs",
        _TESTS,
    ),
    (
        r"(?:the\s+)?lint(?:er|ers|ing)?|linters?",
        r"(?:ruff|flake8|pylint|eslint|golangci-lint|clippy|(?:npm|pnpm|yarn)\s+(?:run\s+)?lint|make\s+lint)",
    ),
    (
        r"(?:the\s+)?type\s*-?check(?:s|er|ing)?|mypy|pyright|tsc",
        r"(?:mypy|pyright|tsc|(?:npm|pnpm|yarn)\s+(?:run\s+)?typecheck)",
    ),
    (
        r"(?:the\s+)?build",
        r"(?:make|npm\s+run\s+build|cargo\s+build|go\s+build|(?:gradlew?|mvn)\s+\S*\s*build)",
    ),
)
"""What "run the tests / the linter / the type checks / the build" runs."""

_PROGRAMS = frozenset(
    [
        "rm",
        "git",
        "sudo",
        "curl",
        "wget",
        "chmod",
        "chown",
        "dd",
        "mkfs",
        "shutdown",
        "reboot",
        "kill",
        "pkill",
        "killall",
        "docker",
        "kubectl",
        "terraform",
        "helm",
        "npm",
        "pnpm",
        "yarn",
        "pip",
        "pip3",
        "npx",
        "psql",
        "mysql",
        "drop",
        "truncate",
        "ssh",
        "scp",
        "rsync",
        "mv",
        "cp",
        "find",
        "sed",
        "tee",
        "eval",
        "exec",
        "nc",
        "netcat",
        "ncat",
        "apt",
        "apt-get",
        "brew",
        "gh",
        "aws",
        "gcloud",
    ]
)
"""Programs a rule may name without backticks ("never run rm -rf"); other bare words
("never run destructive commands") are no command."""

_FILE_EXTENSIONS = frozenset(
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
        "c",
        "h",
        "cpp",
        "css",
        "html",
        "xml",
        "csv",
        "log",
        "sql",
        "mod",
        "sum",
        "gradle",
        "kt",
        "swift",
        "php",
        "ipynb",
    ]
)
"""Endings of file names that look like host names (``package-lock.json``); ``sh`` is not
among them: ``transfer.sh`` is a host, and a host is only read after an egress verb."""
_HOST_RE = re.compile(r"(?:\*\.)?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}\b")
_URL_RE = re.compile(r"https?://([^/\s:]+)")
_PATH_RE = re.compile(r"(?:~|\.{1,2})?/?(?:[\w*?.\-]+/)*[\w*?.\-]*")

_TICKED_RE = re.compile(r"`([^`]{1,200})`")
_SPLIT_RE = re.compile(
    r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)(?<!\bvs\.)(?<!z\.B\.)(?<!z\. B\.)(?<!p\.ej\.)(?<!\bex\.)"
    r"(?<!\bp\.ex\.)(?<!\bbzw\.)(?<!\busw\.)(?<!\betc\.)\s+(?=\S)|\n+"
)
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEAD_RE = re.compile(
    rf"^(?:{_NEG}|always|only|ask|get|obtain|request|seek|wait|run|make\s+sure|ensure|"
    r"please|you\s+must|you\s+should|must|use\s+only|don't|do\s+not)\b"
)
_DIRECTIVE_RE = re.compile(
    rf"(?:^|\b)(?:{_NEG}|always|only|must|ask\s+(?:for|before)|approval|permission|"
    r"make\s+sure|ensure|required?|before\s+\w+ing|limited\s+to|restricted\s+to)\b"
)
_LEADING_CONDITION_RE = re.compile(r"^(?:if|when|whenever|unless|in\s+case)\b")
_CONDITIONAL_RE = re.compile(
    r"^(?:if|when|whenever|unless|in\s+case|where)\b|\b(?:if|unless|when)\b"
)


@dataclass(frozen=True, slots=True)
class DerivedRule:
    """One rule read from one sentence: the policy ``key``, its ``value`` (a string, or
    the table of a ``require_before`` rule) and the ``sentence`` it came from."""

    key: str
    value: Any
    sentence: str


@dataclass(frozen=True, slots=True)
class Derivation:
    """What :func:`derive` understood: the rules (each citing its sentence), the
    directive sentences it could not use with the reason, and how many sentences
    stated no rule at all."""

    rules: tuple[DerivedRule, ...] = ()
    unused: tuple[tuple[str, str], ...] = ()
    descriptive: int = 0
    truncated: bool = False

    def mapping(self, policy_id: str) -> dict[str, Any]:
        """The policy table (``policy_id`` plus one key per kind of rule, values in order,
        duplicates dropped): valid input of :meth:`features.policy.check.Policy.from_mapping`."""
        out: dict[str, Any] = {"policy_id": policy_id}
        for rule in self.rules:
            values = out.setdefault(rule.key, [])
            if rule.value not in values:
                values.append(rule.value)
        if "require_approval_for" in out:
            # the sentences say to *ask*: a request naming the action counts when telemetry
            # does not show the answer (approved out of band); a denial still does not
            out["require_approval_answer"] = False
        return out


def derived_policy_id(text: str) -> str:
    """The id of the policy derived from ``text``: ``instructions-<digest>``, the same for
    the same instructions."""
    return "instructions-" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


@lru_cache(maxsize=64)
def derive(text: str) -> Derivation:
    """The rules stated in ``text`` (see the module docstring).

    >>> d = derive("Never modify anything under tests/. Ask for approval before any git push. "
    ...            "Run the tests before committing. Only fetch from pypi.org. "
    ...            "tests/ has the tests.")
    >>> for r in d.rules:
    ...     print(r.key, r.value if isinstance(r.value, str) else sorted(r.value))
    forbidden_write_paths tests/**
    require_approval_for git\\s+push
    require_before ['action', 'requires']
    allowed_egress_hosts pypi.org
    >>> d.descriptive
    1
    """
    truncated = len(text) > MAX_CHARS
    rules: list[DerivedRule] = []
    unused: list[tuple[str, str]] = []
    descriptive = 0
    for n, (sentence, line) in enumerate(_sentences(text[:MAX_CHARS])):
        if n >= MAX_SENTENCES:
            truncated = True
            break
        # a sentence naming SQL statements in capitals ("never run DELETE or MERGE on
        # analytics") is read by its structure: lower-cased, "merge" would read as git's
        found, why = ([], None) if names_sql(sentence) else _sentence_rules(sentence)
        if not found and (
            why in (None, _NOT_UNDERSTOOD) or (why == _CONDITION and consent_condition(sentence))
        ):
            # not an English rule this grammar knows (or a prohibition that waits for a
            # person's say-so: an approval): read it by its structure, in any language
            # (features.policy.structured), bounded by the time its line states
            bound = time_bound(line)
            found = [DerivedRule(k, v, sentence) for k, v in sentence_rules(sentence, bound, line)]
        if not found and why is not None:
            found, reason = _data_rules(sentence, text[:MAX_CHARS])
            why = reason or why
            if found and reason:
                unused.append((sentence, reason))  # the parts of it not understood
        if found:
            rules.extend(found)
        elif why is None:
            descriptive += 1
        else:
            unused.append((sentence, why))
    return Derivation(tuple(rules), tuple(unused), descriptive, truncated)


_TARGET_NOUN_RE = re.compile(
    r"\b(?:hosts?|targets?|ips?|ip\s+addresses|networks?|subnets?|ranges?|domains?|servers?"
    r"|machines?|systems?|assets?|scann\w*|attack\w*)\b"
)
_SCOPE_IN_FILE = "a scope kept in a file: its contents are data, not read as the rule"


def _data_rules(sentence: str, text: str) -> tuple[list[DerivedRule], str | None]:
    """Rules about the data a call carries (:func:`features.policy.masking.masking_rule`)
    or the network targets it may reach (:mod:`features.policy.scope`): the allowed
    addresses and networks are those the whole instruction ``text`` names (the task names
    the range, the rule says only it may be attacked). (rules, None), or ([], the reason
    a scope rule could not be stated)."""
    table = masking_rule(sentence)
    if table is not None:
        return [DerivedRule("require_masked", table, sentence)], None
    globs, rest = object_writes(_normalise(sentence))
    if globs:
        why = f"{_NOT_UNDERSTOOD}: {'; '.join(rest)}" if rest else None
        return [DerivedRule("forbidden_write_paths", g, sentence) for g in globs], why
    if states_scope(sentence) and _TARGET_NOUN_RE.search(sentence.casefold()):
        allowed = named_scope(sentence, text)
        if not allowed:
            return [], _SCOPE_IN_FILE
        return [DerivedRule("network_scope", a, sentence) for a in allowed], None
    return [], None


_ARTEFACT_RE = re.compile(
    r"(?:code|source|scripts?|files?|modules?|harness|logic|implementation|config(?:uration)?)"
)
"""Nouns of things kept in files: "the grading code" names files by its modifier."""
_OBJECT_WRITE_RE = re.compile(
    r"^(?:modify|modifying|edit|editing|change|changing|alter|altering|touch|touching"
    r"|tamper(?:ing)?\s+with|overwrite|overwriting|rewrite|rewriting|patch|patching)\s+"
    r"(?:(?:the|any|a|an|our|your|its)\s+)?(?P<words>(?:[a-z][a-z]{2,30}\s+){1,2})"
    rf"(?P<head>{_ARTEFACT_RE.pattern})$"
)
_PART_SPLIT_RE = re.compile(r"\s*(?:,|;|\bor\b|\band\b|\bnor\b)\s*")
_NOT_PATH_WORDS = frozenset(["the", "any", "existing", "original", "main", "other", "own", "new"])


def path_word_globs(word: str) -> list[str]:
    """Globs of the paths that name ``word`` as a word of a file or folder name, in its
    usual forms (``grading`` → grading, grade, grader): ``grade.py``,
    ``grading/``, ``eval/grader.py``, ``test_grading.py``, ``auto_grade_v2.py``; not
    ``upgrade.py`` nor ``gradient.py`` (the word is a whole word of the name: it starts
    the name or follows ``_``/``-``, and ends it or precedes ``.``/``_``/``-``).

    >>> path_word_globs("grading")[:3]
    ['grading/**', 'grading.*', 'grading[_-]*/**']
    >>> path_word_globs("grading")[3:6]
    ['*[_-]grading/**', '*[_-]grading.*', '*[_-]grading[_-]*/**']
    """
    stem = re.sub(r"(?:ing|ers|er|es|e|s)$", "", word) if len(word) > 5 else word
    forms = dict.fromkeys([word, *(stem + end for end in ("e", "er", "ing"))])
    out: list[str] = []
    for f in forms:
        if len(f) < 3:
            continue
        out += [f"{f}/**", f"{f}.*", f"{f}[_-]*/**", f"*[_-]{f}/**", f"*[_-]{f}.*"]
        out.append(f"*[_-]{f}[_-]*/**")
    return list(dict.fromkeys(out))


def object_writes(norm: str) -> tuple[list[str], list[str]]:
    """The write prohibitions of a sentence that forbids changing code named by what it
    does ("you may not hand-label data, copy reference solutions or modify the grading
    code"): (globs of the paths naming the noun phrase's modifiers, the other parts of
    the list, not understood). Only after a negation, and only for a noun phrase whose
    head is a thing kept in files (code, scripts, files, harness …): "never change the
    public api" names an interface, not files.

    >>> globs, rest = object_writes("you may not hand-label data, copy reference "
    ...                             "solutions or modify the grading code")
    >>> globs[0], rest
    ('grading/**', ['hand-label data', 'copy reference solutions'])
    """
    m = re.match(rf"^{_SUBJECT}{_NEG}{_EVER}\s+", norm)
    if m is None:
        return [], []
    globs: list[str] = []
    rest: list[str] = []
    for part in _PART_SPLIT_RE.split(norm[m.end() :].strip(" .!")):
        if not part:
            continue
        found = _OBJECT_WRITE_RE.match(part)
        words = [w for w in found["words"].split() if w not in _NOT_PATH_WORDS] if found else []
        if not words:
            rest.append(part)
            continue
        for word in words:
            globs += [g for g in path_word_globs(word) if g not in globs]
    return globs, rest


# -- sentences and clauses ------------------------------------------------------------------


_NOT_UNDERSTOOD = "a directive of a shape not understood"
_CONDITION = "a condition the policy format cannot state"
_ENUMERATION_RE = re.compile(
    r"(?:^|(?<=[\s;:,.]))\s*\((?:\d{1,2}|[a-h]|i{1,3}|iv|v|vi{1,3})\)\s+|(?<=[;:])\s*\d{1,2}[.)]\s+"
)
"""Clauses numbered inside one line ("Refund policy: (1) …; (2) …; (3) …"): each is a
sentence of its own."""


def _sentences(text: str) -> Iterable[tuple[str, str]]:
    """The sentences of ``text`` with the line each is on: lines, bullets and sentence
    ends; markdown headings and fences are not sentences."""
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or not stripped or stripped.startswith(("#", "<", "|")):
            continue
        stripped = _BULLET_RE.sub("", stripped)
        for sentence in _within_parentheses(_SPLIT_RE.split(stripped)):
            for part in _ENUMERATION_RE.split(sentence):
                part = part.strip().rstrip(";").strip()
                if len(part) >= 3:
                    yield part[:600], stripped


def _within_parentheses(pieces: list[str]) -> Iterable[str]:
    """``pieces`` of a line, those cut inside a parenthesis joined back ("any order above
    800 EUR (total incl. VAT) needs approval": "incl." is not a sentence end)."""
    held = ""
    for piece in pieces:
        held = f"{held} {piece}" if held else piece
        if held.count("(") <= held.count(")") or len(held) > 600:
            yield held
            held = ""
    if held:
        yield held


def _normalise(sentence: str) -> str:
    s = sentence.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    s = s.replace("\u201d", '"').replace("**", "").replace("__", "")
    s = s.lower()
    s = re.sub(r"\bdon't\b|\bdont\b", "do not", s)
    s = re.sub(r"\bmustn't\b", "must not", s)
    s = re.sub(r"\bshouldn't\b", "should not", s)
    s = re.sub(r"\bcan't\b", "cannot", s)
    s = re.sub(r"\bnever\s+ever\b", "never", s)
    return " ".join(s.split())


def _clauses(norm: str) -> list[str]:
    """``norm`` cut at ``,``/``;``/`` and `` where a new directive begins (a list of
    hosts or paths stays in its clause)."""
    pieces = re.split(
        r"\s*[;,]\s*|:\s+|\s+and\s+(?=(?:never|do\s+not|always|only|ask|run)\b)", norm
    )
    out: list[str] = []
    for piece in pieces:
        piece = piece.strip(" .:!")
        if not piece:
            continue
        bare = re.sub(r"^(?:and|or|but|also|then|please)\s+", "", piece)
        if out and not _HEAD_RE.match(bare):
            out[-1] = f"{out[-1]}, {piece}"
        else:
            out.append(bare)
    return out


_ELLIPTICAL_NEG_RE = re.compile(rf"^{_NEG}\s+`[^`]{{1,80}}`$")
_SUBJECT_THEN_OBJECT_RE = re.compile(r"^\S.{0,200}?\s[a-z]{2,20}\s+`[^`]{1,80}`$")


def _continues_subject(previous: str, clause: str) -> bool:
    """Whether ``clause`` is a negation without a verb of its own ("never `wipe`") that
    continues a previous clause stating what a *subject* gets ("personal devices get
    `retire`", "for personal devices use `retire`"): the prohibition holds for that
    subject only, a condition the policy format cannot state. After an imperative ("use
    `retire`, never `wipe`", "always use …") the prohibition is the agent's, whole.

    >>> _continues_subject("personal (byod) devices get `retire`", "never `wipe`")
    True
    >>> _continues_subject("use `retire`", "never `wipe`"), _continues_subject("", "never `wipe`")
    (False, False)
    """
    return (
        bool(previous)
        and _ELLIPTICAL_NEG_RE.match(clause) is not None
        and _HEAD_RE.match(previous) is None
        and _SUBJECT_THEN_OBJECT_RE.match(previous) is not None
    )


def _sentence_rules(sentence: str) -> tuple[list[DerivedRule], str | None]:
    """(rules, None) when the sentence gave rules; ([], reason) for a directive it could
    not use; ([], None) for a sentence that states no rule."""
    norm = _normalise(sentence)
    if norm.rstrip().endswith("?"):
        return [], "a question, not a rule"
    if not _DIRECTIVE_RE.search(norm):
        return [], None
    if _LEADING_CONDITION_RE.match(norm):
        return [], "a condition the policy format cannot state"
    rules: list[DerivedRule] = []
    reasons: list[str] = []
    previous = ""
    for clause in _clauses(norm):
        scoped = _continues_subject(previous, clause)
        previous = clause
        if scoped or (_CONDITIONAL_RE.search(clause) and not _REQUIRE_BEFORE_UNLESS.search(clause)):
            reasons.append(_CONDITION)
            continue
        got = [
            (k, _original_case(v, sentence) if k.endswith("write_paths") else v)
            for k, v in _clause_rules(clause)
        ]
        rules.extend(DerivedRule(key, value, sentence) for key, value in got)
        if not got and _DIRECTIVE_RE.search(clause):
            reasons.append(_NOT_UNDERSTOOD)
    if rules:
        return rules, None
    return [], reasons[0] if reasons else _NOT_UNDERSTOOD


def _original_case(value: Any, sentence: str) -> Any:
    """A path read from the lower-cased clause, spelt as the sentence spells it
    (``AGENTS.md``, not ``agents.md``: paths are case-sensitive)."""
    if not isinstance(value, str) or not re.search(r"[a-z]", value):
        return value
    base = value.removesuffix("/**")
    m = re.search(re.escape(base), sentence, re.IGNORECASE)
    if m is None or m.group(0) == base:
        return value
    return m.group(0) + value[len(base) :]


# -- clause shapes ----------------------------------------------------------------------

_WRITE_RE = re.compile(
    rf"^{_SUBJECT}{_NEG}{_EVER}\s+(?:modify|edit|write(?:\s+to)?|change|touch|delete|remove|overwrite|"
    r"alter|update|commit\s+changes\s+to)\s+(?P<rest>.+)$"
)
_RUN_RE = re.compile(
    rf"^{_SUBJECT}{_NEG}{_EVER}\s+(?:run|execute|use|call|invoke|type)\s+(?P<rest>.+)$"
)
_NEG_VERB_RE = re.compile(rf"^{_SUBJECT}{_NEG}{_EVER}\s+(?P<rest>.+)$")
_DENY_HOST_RE = re.compile(
    rf"^{_SUBJECT}{_NEG}{_EVER}\s+(?:access|contact|call|reach|visit|browse|connect\s+to|fetch\s+from|"
    r"download\s+from|upload\s+(?:\w+\s+){0,2}to|send\s+(?:\w+\s+){0,3}to|post\s+to)"
    r"\s+(?P<rest>.+)$"
)
_ONLY_HOST_RE = re.compile(
    r"^(?:you\s+(?:may|must|should|can)\s+)?(?:only|use\s+only|exclusively)\s+"
    r"(?:(?:fetch|download|install|pull|access|contact|reach|use|connect|talk|send|browse|make"
    r"\s+requests?|make\s+network\s+requests?)\w*\s+)?(?:packages\s+|data\s+|files\s+)?"
    r"(?:from|to|with)?\s*(?P<rest>.+)$"
    r"|^(?:network\s+access|egress|outbound\s+(?:traffic|requests?))\s+(?:is\s+)?(?:only\s+"
    r"(?:allowed\s+)?|limited\s+|restricted\s+)(?:to|for)\s+(?P<rest2>.+)$"
)
_APPROVAL_WORDS = (
    r"(?:approval|permission|confirmation|consent|sign[\s-]?off|the\s+go[\s-]?ahead|an?\s+ok)"
)
_ASK_BEFORE_RE = re.compile(
    r"^(?:always\s+|you\s+must\s+|you\s+should\s+|must\s+)?(?:ask|get|obtain|request|seek|wait|"
    r"require|need|check\s+with\s+(?:the\s+)?(?:user|a\s+human|me))\w*\s+"
    r"(?:(?:the\s+)?(?:user|a\s+human|me|a\s+maintainer|an?\s+operator|a\s+person)\s+)?"
    r"(?:for\s+)?"
    rf"(?:(?:the\s+|a\s+|an\s+)?(?:user'?s?\s+|human\s+|explicit\s+|written\s+|my\s+)*{_APPROVAL_WORDS}\s+)?"
    r"(?:(?:from|of)\s+(?:the\s+)?(?:user|a\s+human|me|a\s+maintainer|an?\s+operator)\s+)?"
    r"before\s+(?P<rest>.+)$"
)
_WITHOUT_APPROVAL_RE = re.compile(
    rf"^{_SUBJECT}{_NEG}{_EVER}\s+(?P<rest>.+?)\s+without\s+(?:(?:first\s+)?asking|(?:the\s+user'?s?\s+|"
    rf"explicit\s+|prior\s+|human\s+|written\s+)*{_APPROVAL_WORDS}|being\s+asked|checking\s+with)"
)
_ONLY_AFTER_APPROVAL_RE = re.compile(
    rf"^(?:you\s+may\s+)?(?:only\s+)?(?P<rest>.+?)\s+only\s+(?:after|with|once)\s+(?:\w+\s+){{0,3}}"
    rf"{_APPROVAL_WORDS}"
)
_RUN_BEFORE_RE = re.compile(
    r"^(?:always\s+|you\s+must\s+|must\s+|make\s+sure\s+(?:to|you)\s+|ensure\s+(?:you\s+)?)?"
    r"(?:run|execute)\s+(?P<check>.+?)\s+(?:before|prior\s+to)\s+(?P<action>.+)$"
)
_PASS_BEFORE_RE = re.compile(
    r"^(?:make\s+sure|ensure|check\s+that|verify\s+that)\s+(?P<check>.+?)\s+(?:pass|passes|are\s+green"
    r"|succeed|succeeds)\s+(?:before|prior\s+to)\s+(?P<action>.+)$"
)
_NEG_WITHOUT_CHECK_RE = re.compile(
    rf"^{_SUBJECT}{_NEG}{_EVER}\s+(?P<action>.+?)\s+(?:without\s+(?:first\s+)?(?:running|passing)|before\s+"
    r"(?:running|passing))\s+(?P<check>.+)$"
)
_REQUIRE_BEFORE_UNLESS = re.compile(
    rf"^{_SUBJECT}{_NEG}{_EVER}\s+.+?\s+unless\s+.+\s+(?:pass|passes|are\s+green)$"
)
_NEG_UNLESS_CHECK_RE = re.compile(
    rf"^{_SUBJECT}{_NEG}{_EVER}\s+(?P<action>.+?)\s+unless\s+(?P<check>.+?)\s+(?:pass|passes|are\s+green)$"
)


def _clause_rules(clause: str) -> list[tuple[str, Any]]:
    """The rules of one normalised clause, as (policy key, value)."""
    for pattern in (_RUN_BEFORE_RE, _PASS_BEFORE_RE, _NEG_WITHOUT_CHECK_RE, _NEG_UNLESS_CHECK_RE):
        m = pattern.match(clause)
        if m:
            check, action = _check_regex(m["check"]), _actions(m["action"])
            if check and action:
                return [("require_before", {"action": a, "requires": check}) for a in action]
            return []
    for pattern in (_ASK_BEFORE_RE, _WITHOUT_APPROVAL_RE, _ONLY_AFTER_APPROVAL_RE):
        m = pattern.match(clause)
        if m:
            return [("require_approval_for", a) for a in _actions(m["rest"])]
    m = _ONLY_HOST_RE.match(clause)
    if m:
        hosts = _hosts(m["rest"] or m["rest2"] or "")
        return [("allowed_egress_hosts", h) for h in hosts]
    m = _WRITE_RE.match(clause)
    if m:
        paths = _paths(m["rest"])
        if paths:
            return [("forbidden_write_paths", p) for p in paths]
    m = _DENY_HOST_RE.match(clause)
    if m:
        hosts = _hosts(m["rest"])
        if hosts:
            return [("denied_egress_hosts", h) for h in hosts]
    m = _RUN_RE.match(clause)
    if m:
        commands = _commands(m["rest"])
        if commands:
            return [("forbidden_commands", c) for c in commands]
    m = _NEG_VERB_RE.match(clause)
    if m:
        rest = m["rest"]
        commands = _commands(rest, bare=False)
        if commands:
            return [("forbidden_commands", c) for c in commands]
        actions = _actions(rest, whole=True)
        if actions:
            return [("forbidden_commands", a) for a in actions]
    return []


def _command_regex(command: str) -> str:
    """A command as a regex: words escaped, any run of spaces between them."""
    words = command.strip().split()
    body = r"\s+".join(re.escape(w) for w in words)
    head = r"\b" if words and re.match(r"\w", words[0]) else ""
    tail = r"\b" if words and re.search(r"\w$", words[-1]) else ""
    return f"{head}{body}{tail}"


_QUOTED_OBJECT_RE = re.compile(
    r"^(?:(?:running|executing|using|calling|invoking)\s+)?(?:the\s+|any\s+|a\s+)?"
    r"(?:commands?\s+|programs?\s+|scripts?\s+)?"
    r"(?:like\s+|such\s+as\s+|e\.g\.\s+)?[`\"']"
)


def _commands(rest: str, *, bare: bool = True) -> list[str]:
    """Commands named in ``rest``: backticked or quoted ones when they are the object
    (``never `git push -f```, ``do not run commands like `rm -rf` ``; not a file quoted
    later in the clause), else (``bare``) the words up to the clause's end when they
    start with a known program or carry a ``-flag``."""
    ticked: list[Any] = []
    if _QUOTED_OBJECT_RE.match(rest):
        ticked = _TICKED_RE.findall(rest) or re.findall(r"\"([^\"]{1,200})\"|'([^']{2,200})'", rest)
    if ticked:
        found = [t if isinstance(t, str) else (t[0] or t[1]) for t in ticked]
        return [_command_regex(c) for c in found if c.strip()]
    if not bare:
        return []
    words = re.split(
        r"\s+(?:on|in|against|inside|anywhere|at|for|to|or|unless|without|outside)\s+|,", rest
    )[0]
    words = re.sub(r"^(?:the\s+|a\s+|any\s+)?(?:commands?\s+)?", "", words).strip()
    tokens = words.split()
    if not tokens:
        return []
    if tokens[0] in _PROGRAMS or any(t.startswith("-") and len(t) > 1 for t in tokens[1:]):
        return [_command_regex(" ".join(tokens[:6]))]
    return []


def _actions(rest: str, *, whole: bool = False) -> list[str]:
    """The command regexes of the actions ``rest`` names (``any git push``, ``pushing or
    deploying``, a backticked command). With ``whole``, the action must be all of
    ``rest`` (``never force-push`` is a rule, ``never push yourself too hard`` no action)."""
    ticked = _TICKED_RE.findall(rest) if _QUOTED_OBJECT_RE.match(rest) else []
    if ticked:
        return [_command_regex(c) for c in ticked if c.strip()]
    text = re.sub(
        r"^(?:you\s+|we\s+)?(?:(?:any|a|an|the|each|every|all|doing\s+an?)\s+)?", "", rest.strip()
    )
    out: list[str] = []
    for part in re.split(r"\s*(?:,|\bor\b|\band\b|/)\s*", text):
        part = re.sub(r"^(?:any|a|an|the|each|every|all)\s+", "", part.strip())
        if not part:
            continue
        for verb, command in ACTIONS:
            pattern = (
                rf"^(?:{verb})(?:\s+(?:to\s+)?(?:\S+\s*){{0,4}})?$" if whole else rf"^(?:{verb})\b"
            )
            if re.match(pattern, part):
                if whole:
                    target = _target(part, verb)
                    if target is None:
                        break
                    if target:
                        command = rf"(?:{command})\s+(?:\S+\s+){{0,16}}?{re.escape(target)}\b"
                if command not in out:
                    out.append(command)
                break
    return out


def _target(part: str, verb: str) -> str | None:
    """What follows the verb of ``never push to main``: "" for nothing (or a generic
    object: ``changes``), the target (``main``) for a branch, remote or environment, None
    for anything else (``never push yourself too hard`` names no action)."""
    rest = re.sub(rf"^(?:{verb})", "", part).strip()
    m = re.match(
        r"^(?:(?:to|into|on|onto)\s+)?(?:the\s+)?(?P<target>[\w./-]+)?"
        r"(?:\s*\b(?P<kind>branch|remote|environment|env|server))?$",
        rest,
    )
    if not rest:
        return ""
    if m is None:
        return None
    target = m["target"] or ""
    if target in ("changes", "code", "commits", "commit", "anything", "it", "them", ""):
        return "" if not m["kind"] or target else None
    return target


def _check_regex(check: str) -> str | None:
    """What "run CHECK" runs, as a regex: a backticked command, or the tests/linter/type
    checks/build."""
    ticked = _TICKED_RE.findall(check)
    if ticked:
        return "|".join(_command_regex(c) for c in ticked)
    check = re.sub(r"^(?:the|all|your|our|full|relevant)\s+", "", check.strip())
    for words, regex in _CHECKS:
        if re.fullmatch(rf"(?:{words})(?:\s+(?:suite|locally|first|again))*", check):
            return regex
    tokens = check.split()
    if tokens and tokens[0] in {
        "pytest",
        "tox",
        "make",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "go",
        "jest",
    }:
        return _command_regex(" ".join(tokens[:4]))
    return None


def _hosts(rest: str) -> list[str]:
    """Host names in ``rest`` (from URLs, or bare names with a top-level domain that is
    not a file extension: ``package-lock.json`` is a file)."""
    out: list[str] = []
    for host in _URL_RE.findall(rest):
        if host not in out:
            out.append(host.strip("."))
    for m in _HOST_RE.finditer(rest):
        host = m.group(0).strip(".")
        if host.rsplit(".", 1)[-1] in _FILE_EXTENSIONS or host in out:
            continue
        start = m.start()
        if start > 0 and rest[start - 1] in "/@":
            continue  # part of a URL path or an e-mail address already read
        out.append(host)
    return out


def _paths(rest: str) -> list[str]:
    """Path globs in ``rest``: tokens with a ``/`` (a folder: ``tests/`` → ``tests/**``), a
    file name with an extension, or a glob."""
    rest = re.sub(r"\b(?:anything|any\s+files?|files?|the|a|any|code|contents?\s+of)\b", " ", rest)
    rest = re.sub(r"\b(?:under|in|inside|within|below|from|of)\b", " ", rest)
    rest = re.sub(r"\b(?:directory|directories|folder|folders|dir)\b", " ", rest)
    out: list[str] = []
    for token in re.split(r"[\s,]+|\bor\b|\band\b", rest):
        token = token.lstrip("`\"'(").rstrip("`\"').:;")
        if not token or token in ("or", "and"):
            continue
        if not _PATH_RE.fullmatch(token):
            return []  # other words: not a list of paths ("never change the public api")
        if token.endswith("/"):
            glob = token.rstrip("/") + "/**"
        elif "/" in token or "*" in token or "." in token.strip(".") or token.startswith("."):
            glob = token
        else:
            return []
        glob = glob.removeprefix("./")
        if glob not in out:
            out.append(glob)
    return out


# -- TOML ---------------------------------------------------------------------------------


def to_toml(derivation: Derivation, policy_id: str) -> str:
    """The derived policy as a TOML file a person can check, edit and attach, each rule
    preceded by the sentence it came from, then the sentences that could not be used.

    >>> print(to_toml(derive("Never run `rm -rf`. Do you want tests?"), "mine"), end="")
    # Derived from instructions by `trajwatch policy --from-instructions`; check each rule.
    policy_id = 'mine'
    <BLANKLINE>
    # "Never run `rm -rf`."
    forbidden_commands = [
        '\\brm\\s+\\-rf\\b',
    ]
    <BLANKLINE>
    # Not used (1):
    # - "Do you want tests?" (a question, not a rule)
    """
    lines = [
        "# Derived from instructions by `trajwatch policy --from-instructions`; check each rule.",
        f"policy_id = {_toml_str(policy_id)}",
    ]
    mapping = derivation.mapping(policy_id)
    cited: dict[tuple[str, str], str] = {}
    for rule in derivation.rules:
        cited.setdefault((rule.key, repr(rule.value)), rule.sentence)
    for key, values in mapping.items():
        if key in ("policy_id", "require_before", "forbidden_actions", "require_masked"):
            continue
        if key == "require_approval_answer":
            lines += [
                "",
                "# The instructions say to ask: an approval request naming the action counts",
                "# when its answer is not seen; a denial does not. Set true to need a grant.",
                f"{key} = {'true' if values else 'false'}",
            ]
            continue
        lines.append("")
        sentences = dict.fromkeys(cited[(key, repr(value))] for value in values)
        lines.extend(f"# {_toml_str(sentence, comment=True)}" for sentence in sentences)
        lines.append(f"{key} = [")
        lines.extend(f"    {_toml_str(v)}," for v in values)
        lines.append("]")
    for key in ("require_before", "forbidden_actions", "require_masked"):
        for table in mapping.get(key, []):
            lines += [
                "",
                f"# {_toml_str(cited[(key, repr(table))], comment=True)}",
                f"[[{key}]]",
            ]
            lines.extend(
                f"{k} = [{', '.join(_toml_str(x) for x in v)}]"
                if isinstance(v, list)
                else f"{k} = {_toml_str(v)}"
                for k, v in table.items()
            )
    if derivation.unused:
        lines += ["", f"# Not used ({len(derivation.unused)}):"]
        lines.extend(f"# - {_toml_str(s, comment=True)} ({why})" for s, why in derivation.unused)
    if derivation.truncated:
        lines.append(
            f"# Only the first {MAX_CHARS} characters / {MAX_SENTENCES} sentences were read."
        )
    return "\n".join(lines) + "\n"


def _toml_str(value: str, *, comment: bool = False) -> str:
    """A TOML string: literal ('...') where it can be (regexes stay readable), else basic."""
    if comment:
        return '"' + " ".join(value.split())[:200] + '"'
    if "'" not in value and "\n" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
