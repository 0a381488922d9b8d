"""What a tool call's arguments are about: the words it is judged on, and its shape.

Pure functions of a call's text that :class:`features.calls.step_features.StepFeatures` works
out once per call (``intent_drift`` reads them to weigh how far a call is from the task):

- :func:`judged_words` — the content words of a call (:class:`~features.calls.vectors.StepTerms`
  words, de-pluralised stop words dropped); for a code cell that names no file, host or
  repository, the words of its string literals and comments only.
- :func:`tool_words` — the words of the tool's name and its argument keys
  (``get_hotels_prices(hotel_names=…)`` is about hotels).
- :func:`mutation_targets` — the paths a call changes, from the shape of its arguments.
- :func:`authored_payload` — the prose a call writes into a target (a file's content, a
  message's body) and its other arguments.
- :data:`CLONE_RE` / :data:`SEND_RE` — a repository fetched, data sent.

No state, no I/O; each reads a bounded head of its text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from features.calls.canonical import arguments_object
from features.calls.vectors import CONTENT_DROP, StepTerms, tokenize

__all__ = [
    "CLONE_RE",
    "SEND_RE",
    "STEMMED_DROP",
    "authored_payload",
    "judged_words",
    "mutation_targets",
    "tool_words",
]

CLONE_RE = re.compile(r"\b(?:git|gh|hg)\b[^|;&\n]*?\b(?:clone|fetch|pull|submodule|remote)\b")
SEND_RE = re.compile(
    r"\b(?:post|put|patch)\b|--data\b|\s-d\s|\s-f\s|\bupload|\bsend", re.IGNORECASE
)
_KEY_RE = re.compile(r'"([A-Za-z_][\w-]{1,40})":')
STEMMED_DROP = frozenset(
    w[:-1] for w in CONTENT_DROP if len(w) > 3 and w.endswith("s") and not w.endswith("ss")
).difference(CONTENT_DROP)
"""What ``tokenize`` leaves of a dropped word it de-pluralised first (``status`` ->
``statu``, ``this`` -> ``thi``): no more content than the word itself."""
CALL_RE = re.compile(
    r"(?<![\w.])(?=[\w.]*?[A-Za-z_])[\w.]*+\((?!\))|(?<!\w)(?=\w*?[A-Za-z_])\w*+\(\)"
)
"""A function call (``load_notes()``, ``print(rows)``): the shape of code, whatever the
tool or argument is called. Tried only where a run of name characters starts, and the
run is taken whole (``*+``): a 40 KB hex blob costs one pass, not one per position (the
plain form re-scanned the rest of the run from every letter in it: quadratic)."""
_LITERAL_RE = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"|#([^\n]*)")
_PAYLOAD_CHARS = 40  # an argument this long, with spaces in it, is prose the call carries


def judged_words(arguments: str | None, terms: StepTerms) -> set[str]:
    """The content words a call is judged on. A code cell that names no file, host or
    repository is computation over what the agent already holds: its topic is in its
    string literals and comments (the names, queries and text it works on), not in its
    identifiers (``rows = load_notes()``, ``compare(x)`` are the program's own plumbing).

    >>> from features.calls.vectors import StepTerms
    >>> sorted(judged_words('{"code": "rows = load_notes()\\\\nsearch(\\'bitcoin price\\')"}',
    ...                     StepTerms(words=("row", "load", "note", "search", "bitcoin"))))
    ['bitcoin', 'price']
    """
    words = set(terms.words).difference(STEMMED_DROP)
    if terms.paths or terms.hosts or terms.repos or not arguments:
        return words
    if not CALL_RE.search(arguments):
        return _without_options(arguments, words)
    try:
        value = json.loads(arguments)
    except ValueError:
        return words
    if not isinstance(value, dict):
        return words
    texts: list[str] = []
    for v in value.values():
        if isinstance(v, str) and CALL_RE.search(v):
            texts += (a or b or c for a, b, c in _LITERAL_RE.findall(v[:4_000]))
        elif isinstance(v, str):
            texts.append(v)
    return set(tokenize(" ".join(texts), drop=CONTENT_DROP)).difference(STEMMED_DROP)


_OPTION_RE = re.compile(r"(?<![^\s\"'])--?[A-Za-z][\w.-]*(?:=[^\s\"']*)?")
_COMMAND_KEYS = ("command", "cmd")


def _without_options(arguments: str, words: set[str]) -> set[str]:
    """``words`` less those only a shell command's options spell (``-input=false``,
    ``--timeout=60s``, ``--oneline``): an option is how the program runs, not what the
    call is about (a value given as the next word, ``-n payments``, stays).

    >>> from features.calls.vectors import tokenize
    >>> args = '{"command": "terraform plan -input=false -out=tfplan"}'
    >>> sorted(_without_options(args, set(tokenize(args))))
    ['command', 'terraform']
    """
    value = arguments_object(arguments)
    command = next(
        (value[k] for k in _COMMAND_KEYS if value and isinstance(value.get(k), str)), None
    )
    if not command or "-" not in command:
        return words
    options = set(tokenize(" ".join(_OPTION_RE.findall(command[:4_000]))))
    rest = set(tokenize(_OPTION_RE.sub(" ", command[:4_000])))
    return words.difference(options - rest)


def tool_words(tool: str | None, arguments: str | None) -> list[str]:
    """The content words of a call's tool name and argument keys.

    >>> tool_words("get_hotels_prices", '{"hotel_names": ["Le Marais"]}')
    ['get', 'hotel', 'price', 'hotel']
    """
    names = tool or ""
    if arguments and arguments.startswith("{"):
        names += " " + " ".join(_KEY_RE.findall(arguments[:2_000]))
    return tokenize(names, drop=CONTENT_DROP)


def mutation_targets(
    arguments: str | None,
    paths: tuple[str, ...],
    parsed: Callable[[], dict[str, Any] | None] | None = None,
) -> set[str]:
    """The paths a call changes: content besides the target (two or more free strings,
    or a multi-line one) marks a change, judged from the shape of the arguments so it
    holds whatever the tool is called (``edit``, ``apply_patch``, ``str_replace``,
    ``write``); the target is a path that is a whole argument value or a patch's
    ``File:`` line. A shell command or a code cell is one string and changes nothing
    here (paths inside code are not targets). ``parsed`` gives the arguments'
    :func:`~features.calls.canonical.arguments_object` when the caller has it (the step's
    features: one parse for all readers); asked only when it is read.

    >>> mutation_targets('{"path": "src/a.py", "old": "x", "new": "y"}', ("src/a.py",))
    {'src/a.py'}
    >>> mutation_targets('{"command": "cat src/a.py"}', ("src/a.py",))
    set()
    >>> mutation_targets('"*** Begin Patch\\n*** Update File: src/a.py\\n@@"', ("src/a.py",))
    {'src/a.py'}
    """
    if paths and arguments and arguments.startswith('"'):
        # the whole argument is a patch (a runtime's ``apply_patch`` given its text
        # bare): its ``File:`` lines name what it changes
        return {p for p in paths if f"File: {p}" in arguments[:8_000]}
    if not paths or not arguments or not arguments.startswith("{"):
        return set()
    value = parsed() if parsed is not None else arguments_object(arguments)
    if value is None:
        return set()
    texts = [v for v in value.values() if isinstance(v, str)]
    changes = len(texts) >= 3 or any("\n" in v.strip() for v in texts)
    changes = changes or (len(texts) == 2 and any(len(v) >= 24 and " " in v for v in texts))
    changes = changes or (len(texts) == 2 and any(k in value for k in ("old", "new", "content")))
    if not changes:
        return set()
    whole = {v.strip().removeprefix("./") for v in texts if len(v) < 300}
    return {p for p in paths if p in whole or f"File: {p}" in arguments}


def authored_payload(arguments: str | None) -> tuple[str, str] | None:
    """(payload, the other arguments' text) of a call that writes prose into a target:
    one string argument of ``_PAYLOAD_CHARS`` or more holding spaces (a file's new
    content, a message's body), the others short (an id, a name, a subject, recipients).
    None for any other shape: a lone argument is a query or a command, not a write; and
    None when the others only echo the payload (their text a part of it: a command's
    ``description`` that is its first words) - they name no target to write into, so
    the call is one argument, and whether it is long is no sign of a write.

    >>> authored_payload('{"content": "Activity 3: Escape Room - teams solve puzzles", '
    ...                  '"file_id": "13"}')
    ('Activity 3: Escape Room - teams solve puzzles', '13')
    >>> authored_payload('{"query": "bitcoin price history since 2015 in euros"}') is None
    True
    >>> authored_payload('{"command": "nmap -sV --top-ports 1000 192.168.138.35", '
    ...                  '"description": "nmap -sV --top-ports 1000 192"}') is None
    True
    """
    value = arguments_object(arguments)
    if value is None or len(value) < 2:
        return None
    long = [
        k
        for k, v in value.items()
        if isinstance(v, str) and len(v) >= _PAYLOAD_CHARS and " " in v.strip()
    ]
    if len(long) != 1:
        return None
    rest = " ".join(str(v) for k, v in value.items() if k != long[0] and v not in (None, ""))
    if not rest or echoes(rest, value[long[0]]):
        return None
    return value[long[0]], rest


def echoes(rest: str, payload: str) -> bool:
    """Whether ``rest`` (a call's other arguments) only repeats ``payload``: its text,
    spaces normalised, is part of the payload's - a label of the payload, not a target.

    >>> echoes("nmap -sV 10", "nmap -sV 10.0.0.1"), echoes("notes.md", "tulips and bulbs")
    (True, False)
    """
    short = " ".join(rest.split())
    return bool(short) and short in " ".join(payload.split())
