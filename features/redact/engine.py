"""Secret redaction for every tool argument, result, text and URL before it is stored.

Contract
--------
:func:`redact` replaces each credential it recognises with ``[REDACTED:<kind>]`` and
leaves everything else byte for byte: the names, quotes, user names and hosts around
a secret stay, so a person reading an alert still sees *what* was done.
:func:`redact_value` does the same inside dicts and lists and also blanks any value
whose dict key names a secret.

Both are pure, never raise on ``str`` input, and are idempotent
(``redact(redact(x)) == redact(x)``): a marker is never matched again.

Kinds
-----
Recognised by format, wherever they appear: ``private_key`` (any ``-----BEGIN …
PRIVATE KEY[ BLOCK]-----`` block, also when cut short or JSON-escaped),
``aws_access_key``, ``github_token``, ``slack_token``, ``slack_webhook``,
``discord_webhook``, ``anthropic_key``, ``openai_key``, ``stripe_key``,
``webhook_secret`` (``whsec_``), ``google_api_key`` (``AIza``), ``npm_token``,
``pypi_token``, ``huggingface_token``, ``jwt``, ``gcp_service_account_key``
(``"private_key_id"``; its PEM is ``private_key``), ``azure_storage_key``
(``AccountKey=``/``SharedAccessKey=``), ``url_signature`` (``sig=``,
``X-Amz-Signature=`` query values).

Recognised by context: ``url_password`` (``scheme://user:PASS@host``, user and host
kept), ``bearer_token`` (``Bearer X``), ``basic_auth`` (``Authorization: Basic X``,
``curl -u user:PASS``), ``authorization_header`` (other ``Authorization:`` schemes, such as
Okta's ``SSWS X``), ``password_assignment`` also for a ``.netrc`` entry's ``password X``
and a password on a command line (``mysql -pX``, ``sshpass -p X``, ``docker login -p X``),
``password_assignment`` and ``api_key_assignment``: a name that means a secret,
then ``=``/``:`` (env, ``export``, JSON, YAML, Python kwargs, HTTP headers such as
``X-Api-Key:``, URL query) or a ``--flag value`` pair.

Decisions (what is *not* redacted)
----------------------------------
- No entropy guessing: git SHAs, UUIDs, sha256 digests, lockfile hashes and base64
  blobs (images) pass untouched. A secret without a known format or a secret-naming
  context is therefore missed; that is the price of not mangling ordinary output.
- Secret *names* are judged by their last word: ``DB_PASSWORD``, ``apiKey``,
  ``X-Api-Key``, ``client_secret``, ``GITHUB_TOKEN``, ``SECRET_ACCESS_KEY`` count;
  ``max_tokens``, ``tokens_in``, ``token_count``, ``next_page_token``,
  ``password_reset``, ``--password-stdin``, ``secret_name``, bare ``key`` do not.
- Values that are placeholders stay: empty, ``true``/``false``/``null``/``None``,
  ``${VAR}``, ``$VAR``, ``$(cmd)``, ``%VAR%``, ``{{ x }}``, ``{x}``, ``<token>``,
  ``****``, ``xxxx``, anything with ``...``/``…`` (``sk-...``), ``your_api_key``,
  ``changeme`` (a publicly known default reveals nothing), markers themselves.
- Unquoted values that are code, not data, stay: ``os.environ["API_KEY"]``,
  ``getpass()``, ``args.password``, ``password=password``, type hints
  (``password: str``), pure numbers (``token: 1200``) and paths (``/run/secrets/x``).
  Quoted values are always taken as data.
- Not covered: requests' ``auth=("u", "p")``; YAML values with spaces are cut at the
  first space.

Speed
-----
Each rule names trigger substrings, one of which every match holds. One scan of the
lower-cased text for every trigger (Aho-Corasick, :func:`_occurrences`: ~6 ms a MiB)
proves most texts hold no candidate; the others run only the rules whose triggers occur,
whatever the text's length (a 1 MiB field costs that scan and a few rules per pass).
Every pattern is linear: bounded or possessive repeats, no nested quantifiers over the
same characters. ``assignment`` is tried only where a secret word starts. A
container whose JSON text holds no trigger is copied without visiting its strings one
by one (one scan instead of ~100k for a 1 MiB minified JSON argument). Measured over the
67k texts replaying the fixtures and corpora redacts (CPython 3.11, this repo's venv;
``benchmarks/bench_text_paths.py`` for the samples below): ≈ 10 µs a text against
≈ 13 µs with one scan per rule; 2 KB secret-free shell/JSON argument ≈ 35 µs, 200-byte
argument ≈ 6 µs; worst case seen, 2 KB of Python source dense with
``token``/``key``/``password`` identifiers (40+ candidates) ≈ 140 µs.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

import ahocorasick_rs

from features.redact.rules import (
    _AUTH_KINDS,
    _RULES,
    MARKER_PREFIX,
    _is_placeholder,
    _marker,
    _Rule,
    secret_name_kind,
)
from models.records import DeadLetter, Step


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``.

    Context stays: names, quotes, user names and hosts are kept; only the secret goes.

    >>> redact("export GITHUB_TOKEN=" + "ghp_" + "a1B2" * 9)
    'export GITHUB_TOKEN=[REDACTED:github_token]'
    >>> redact("psql postgres://app:" + "s3cr3t" + "@db.internal:5432/app")
    'psql postgres://app:[REDACTED:url_password]@db.internal:5432/app'
    >>> redact("reset your password; max_tokens=4096")
    'reset your password; max_tokens=4096'
    """
    if not text:
        return text
    memo = len(text) <= _MEMO_MAX_CHARS and type(text) is str
    if memo and text in _FINAL:
        return text
    if not memo and text in _FINAL_LARGE:
        return text
    # A rejected candidate (placeholder, word tail) is skipped whole by ``re.sub`` and
    # may hide a real secret inside it; once something is redacted, another pass finds
    # those. Texts with nothing to redact pay for one pass only.
    for _ in range(_MAX_PASSES):
        redacted = _redact_pass(text)
        if redacted == text:
            break
        text = redacted
    else:
        return text  # not known to be final: never memoised
    if memo and len(text) <= _MEMO_MAX_CHARS:
        if len(_FINAL) >= _MEMO_MAX_ENTRIES:
            # drop the oldest quarter (dicts keep insertion order): cheap, and recurring
            # texts come back in at once
            for key in list(itertools.islice(_FINAL, _MEMO_MAX_ENTRIES // 4)):
                del _FINAL[key]
        _FINAL[text] = None
    elif type(text) is str and len(text) <= _LARGE_MEMO_MAX_CHARS:
        _remember_large(text)
    return text


def _remember_large(text: str) -> None:
    _FINAL_LARGE[text] = None
    global _large_chars
    _large_chars += len(text)
    while _large_chars > _LARGE_MEMO_MAX_CHARS and _FINAL_LARGE:
        oldest = next(iter(_FINAL_LARGE))
        del _FINAL_LARGE[oldest]
        _large_chars -= len(oldest)


_MAX_PASSES = 4

_FINAL: dict[str, None] = {}
"""Texts :func:`redact` returns unchanged (recent ones): redaction is idempotent, so a
redaction comes back unchanged from a second call, and the pipeline's gate re-checks
every field the normalisers redacted; texts recur too (a step's agent, tool, model and
status, the same call in a loop). A text found here is returned as it is, the object
given (what the rules would return); nothing redacted is kept, only what a call
returned or would return unchanged. Bounded: :data:`_MEMO_MAX_ENTRIES` texts of at most
:data:`_MEMO_MAX_CHARS` characters."""
_MEMO_MAX_CHARS = 2_048
_MEMO_MAX_ENTRIES = 4_096

_FINAL_LARGE: dict[str, None] = {}
"""The same for the few most recent texts longer than :data:`_MEMO_MAX_CHARS`: a big
field (a blob, a long output) is redacted where it is read and again by the pipeline's
gate, and often appears in several fields of a step and in the next step's input; each
pass over a MiB costs tens of ms. Bounded by total size (:data:`_LARGE_MEMO_MAX_CHARS`
characters), oldest out first."""
_LARGE_MEMO_MAX_CHARS = 4 * 1024 * 1024
_large_chars = 0


def _rules_for(
    low: str, hits: list[tuple[int, int, int]] | None = None
) -> tuple[bool, tuple[_Rule, ...]]:
    """One scan of ``low`` for the triggers (:func:`_short_hits`, given as ``hits`` when
    done, else :func:`_occurrences`): whether one occurs
    outside the markers already there (else nothing is left to redact:
    :func:`_has_candidate`), and the rules one of whose triggers occurs (inside markers
    too), in rule order.

    Only those rules can match, whatever the text's length: a 1 MiB field holding a
    trigger or two then costs this scan and a few rules, not one ``sub`` per rule (~45
    of them, ~0.13 s a MiB). A big JSON argument holds ~100k short strings, each with,
    say, ``://``: finding the triggers and running one rule beats ~45 ``sub`` calls a
    string.
    """
    if hits is None:
        hits = _short_hits(low)
    if hits is not None:  # the common case, without the generator's overhead
        if not hits:
            return False, ()
        if _MARKER_LOW in low and all(_in_marker(low, start) for _, start, _ in hits):
            return False, ()
        return True, _rules_of(frozenset([trigger for trigger, _, _ in hits]))
    found: set[int] = set()
    outside = False
    for trigger, start in _occurrences(low):
        found.add(trigger)
        if not outside:
            outside = not _in_marker(low, start)
    if not outside:
        return False, ()
    return True, _rules_of(frozenset(found))


@lru_cache(maxsize=1024)
def _rules_of(triggers: frozenset[int]) -> tuple[_Rule, ...]:
    """The rules, in rule order, one of whose triggers holds one of ``triggers`` (indexes
    in :data:`_SHORTEST_TRIGGERS`); texts share a few such sets (``://``, ``token``)."""
    indexes = sorted({i for trigger in triggers for i in _RULES_BY_TRIGGER_INDEX[trigger]})
    return tuple(_RULES[i] for i in indexes)


def _short_hits(low: str) -> list[tuple[int, int, int]] | None:
    """What :func:`_occurrences` finds in ``low`` (as ``(trigger, start, end)``, by start)
    when ``low`` is one chunk the Rust side takes, in one call; else None."""
    if len(low) > _SCAN_CHUNK:
        return None
    try:
        return _TRIGGER_SEARCH(low, overlapping=True)
    except UnicodeEncodeError:
        return None


def _redact_pass(text: str) -> str:
    low = _lower(text)
    hits = _short_hits(low)
    candidate, rules = _rules_for(low, hits)
    if not candidate:
        # No rule's trigger occurs outside markers, so no pattern can match (markers
        # are never matched again). Most texts (72% of those the fixtures and corpora
        # redact) end here.
        return text
    for rule in rules:
        if not rule.literal_prefix:
            for trigger in rule.triggers:
                if trigger in low:
                    break
            else:
                continue
        if rule.anchored:
            redacted = _sub_at_triggers(rule, text, low, hits)
        else:
            redacted = rule.pattern.sub(rule.replace, text)
        if redacted != text:
            text = redacted
            low = _lower(text)
            hits = None  # found in the text as it was
    return text


_MARKER_LOW = MARKER_PREFIX.lower()
_MARKER_RE = re.compile(re.escape(_MARKER_LOW) + r"[a-z_]+\]")


def _has_candidate(low: str) -> bool:
    """Whether a trigger occurs in ``low`` outside the markers already there.

    Marker kinds hold trigger words (``api_key_assignment``, ``github_token``) but no
    rule matches a marker, and no trigger spans a marker's brackets: a text whose only
    triggers are inside markers has nothing left to redact. This is what keeps
    re-redacting a redacted field (the pipeline's gate, the confirming pass of
    :func:`redact`) at one scan, however big the field.
    """
    hits = _short_hits(low)
    if hits is not None:  # the common case, without the generator's overhead
        if not hits:
            return False
        if _MARKER_LOW not in low:
            return True
    past = 0
    for _, start in _occurrences(low):
        if start < past:
            continue  # inside the marker just seen
        if not _in_marker(low, start):
            return True
        past = low.find("]", start) + 1
    return False


def _occurrences(low: str) -> Iterator[tuple[int, int]]:
    """Every occurrence of a trigger in ``low`` (overlapping ones too: ``--user`` holds
    ``-u``), as (index in :data:`_SHORTEST_TRIGGERS`, start), by start.

    One Aho-Corasick pass (``ahocorasick_rs``, Rust): ~6 ms a MiB, where the trie-shaped
    regex costs ~90 ns a character on text made of letters (most of them start some
    trigger, and the engine tries the alternation at each) — 0.09 s a MiB, paid several
    times per big field (the normaliser's passes, the gate's). No trigger holds another
    (:func:`_shortest_triggers`), so ordering by end orders by start. The text is read in
    chunks of :data:`_SCAN_CHUNK` characters, so that a text dense with triggers (``sk``
    repeated) never holds more than a chunk's occurrences in memory. A chunk the Rust side
    cannot take (a lone surrogate: not UTF-8) is scanned by the regex, as before.
    """
    for at in range(0, max(len(low), 1), _SCAN_CHUNK):
        # the chunk, and enough of the next to end a trigger that starts in this one
        piece = low[at : at + _SCAN_CHUNK + _LONGEST_TRIGGER - 1]
        try:
            found = [(i, start) for i, start, _ in _TRIGGER_SEARCH(piece, overlapping=True)]
        except UnicodeEncodeError:
            found = []
            where = 0
            while (m := _CANDIDATE_RE.search(piece, where)) is not None:
                found.append((_TRIGGER_INDEX[m.group()], m.start()))
                where = m.start() + 1
        for i, start in found:
            if start < _SCAN_CHUNK:  # one starting later is the next chunk's
                yield i, at + start


def _in_marker(low: str, at: int) -> bool:
    """Whether position ``at`` of ``low`` is inside a redaction marker (``[REDACTED: x=secret ]``
    typed by hand is no marker)."""
    opened = low.rfind(_MARKER_LOW, 0, at + 1)
    closed = low.find("]", opened) if opened >= 0 else -1
    if opened < 0 or closed < at:
        return False
    return _MARKER_RE.fullmatch(low, opened, closed + 1) is not None


def _sub_at_triggers(
    rule: _Rule, text: str, low: str, hits: list[tuple[int, int, int]] | None = None
) -> str:
    """``rule.pattern.sub(rule.replace, text)`` for an anchored rule, trying the pattern
    only where a trigger starts.

    Every match starts at a trigger, so the first of those positions (at or after the end
    of the previous match) where the pattern matches is where ``re.sub`` would find the
    next match, and the match is the same. ``low`` lines up with ``text`` (:func:`_lower`).
    Searching the whole text instead costs ~20 ns a character: the pattern starts with
    an alternation of 21 words, which defeats the engine's prefix search. ``hits``, the
    triggers :func:`_short_hits` found in ``low``, give the positions when the rule's
    triggers are among those it looks for (:data:`_ANCHORS`).
    """
    anchors = _ANCHORS.get(id(rule)) if hits is not None else None
    starts: set[int] = set()
    if anchors is not None and hits is not None:
        starts = {start for trigger, start, _ in hits if trigger in anchors}
    else:
        for trigger in rule.triggers:
            at = low.find(trigger)
            while at >= 0:
                starts.add(at)
                at = low.find(trigger, at + 1)
    if not starts:
        return text
    parts: list[str] = []
    done = 0
    match = rule.pattern.match
    for start in sorted(starts):
        if start < done:
            continue
        m = match(text, start)
        if m is None:
            continue
        parts += (text[done:start], rule.replace(m))
        done = m.end()
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def _alternation(words: list[str]) -> str:
    """A regex matching any of ``words``, factored as a trie (``a(?:kia|sia)|…``): the
    engine then tries one branch per position instead of one per word."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]
        if not branches or ("" in node and len(node) > 1):
            # a word ends here: it alone is enough (a longer one would contain it)
            return ""
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return emit(trie)


def _shortest_triggers(rules: tuple[_Rule, ...]) -> list[str]:
    """Every rule's triggers, without those that contain another one (found anyway)."""
    every = {t for rule in rules for t in rule.triggers}
    return sorted(t for t in every if not any(o != t and o in t for o in every))


_SHORTEST_TRIGGERS = _shortest_triggers(_RULES)
_CANDIDATE_RE = re.compile(_alternation(_SHORTEST_TRIGGERS))
"""Matches (in the lower-cased text) wherever a trigger of some rule starts; what it
matches is one of :data:`_SHORTEST_TRIGGERS` (only one can start at a position: none is
a prefix of another)."""
_RULES_BY_TRIGGER: dict[str, tuple[int, ...]] = {
    short: tuple(i for i, r in enumerate(_RULES) if any(short in t for t in r.triggers))
    for short in _SHORTEST_TRIGGERS
}
"""The rules (by index) one of whose triggers holds the shortest trigger: where one of a
rule's triggers occurs, one of these occurs too."""
_TRIGGER_INDEX = {trigger: i for i, trigger in enumerate(_SHORTEST_TRIGGERS)}
_ANCHORS = {
    id(rule): frozenset(_TRIGGER_INDEX[t] for t in rule.triggers)
    for rule in _RULES
    if rule.anchored and all(t in _TRIGGER_INDEX for t in rule.triggers)
}
"""For an anchored rule each of whose triggers is one the scan looks for (the ``assignment``
rule's are): their indexes, so that the scan's hits are where the rule is tried."""
_LONGEST_TRIGGER = max(map(len, _SHORTEST_TRIGGERS))
_SCAN_CHUNK = 1 << 16
_RULES_BY_TRIGGER_INDEX = [_RULES_BY_TRIGGER[trigger] for trigger in _SHORTEST_TRIGGERS]
_TRIGGER_SEARCH = ahocorasick_rs.AhoCorasick(
    _SHORTEST_TRIGGERS,
    matchkind=ahocorasick_rs.MatchKind.Standard,
    implementation=ahocorasick_rs.Implementation.DFA,  # ~6 ms a MiB, the NFAs 10-25
).find_matches_as_indexes


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower(text: str) -> str:
    """Lower-case copy whose indices line up with ``text`` (triggers are ASCII)."""
    low = text.lower()
    if len(low) != len(text):  # e.g. "İ" lowers to two code points: fall back, slower
        low = text.translate(_ASCII_LOWER)
    return low


def _redact_whole(kind: str, value: str) -> str:
    if kind == "api_key_assignment":
        scheme, _, rest = value.strip().partition(" ")
        low = scheme.lower()
        if rest and low in ("bearer", "basic", "token", "bot", "digest", "apikey"):
            # ``{"Authorization": "Bearer x"}`` keeps its scheme, like the header rule
            return f"{scheme} {_marker(_AUTH_KINDS.get(low, 'authorization_header'))}"
    return _marker(kind)


def redact_value(obj: Any, _depth: int = 0) -> Any:
    """A deep copy of ``obj`` with strings redacted and secret-named fields blanked.

    Dicts, lists and tuples are rebuilt (the input is never mutated); keys are redacted
    like any string. A value under a key that names a secret (:func:`secret_name_kind`:
    ``password``, ``client_secret``, ``api_key``, ``Authorization``, ``private_key``,
    ``aws_secret_access_key`` …) is replaced whole when it is a non-empty string that is
    not a placeholder; numbers, booleans, None and nested containers under such keys are
    kept (containers are still searched). Other objects are returned as they are.

    >>> redact_value({"password": "correct horse", "max_tokens": 4096, "env": ["TOKEN=${T}"]})
    {'password': '[REDACTED:password_assignment]', 'max_tokens': 4096, 'env': ['TOKEN=${T}']}
    """
    if isinstance(obj, str):
        return redact(obj)
    if (
        _depth == 0
        and (type(obj) is dict or isinstance(obj, (Mapping, list, tuple)))
        and not _small_and_flat(obj)
        and not _may_hold_secret(obj)
    ):
        return _copy(obj)
    if _depth > 64:  # pathological nesting: keep what we cannot walk safely out of stores
        return _marker("too_deep")
    if type(obj) is dict or isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            # The key is judged after its own redaction, so a second pass over the
            # output sees the same key and makes the same choice (idempotence).
            safe_key = redact(key) if isinstance(key, str) else key
            kind = secret_name_kind(safe_key) if isinstance(safe_key, str) else None
            if kind is not None and isinstance(value, str) and not _is_placeholder(value):
                out[safe_key] = _redact_whole(kind, value)
            else:
                out[safe_key] = redact_value(value, _depth + 1)
        return out
    if isinstance(obj, list):
        return [redact_value(v, _depth + 1) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_value(v, _depth + 1) for v in obj)
    return obj


_STEP_TEXT_FIELDS = (
    "agent",
    "tool",
    "action",
    "arguments",
    "result",
    "text",
    "status",
    "error",
    "model",
    "finish_reason",
    "egress_host",
    "egress_url",
    "egress_method",
    "idempotency_key",
    "source_ref",
)
"""Every free-text field of a step. Identities (``step_id``, ``session_id``,
``call_id``, ``parent_step_id``) are not: they are keys, and redacting them would merge
distinct sessions or calls."""


def redact_step(step: Step) -> Step:
    """``step`` with every text field and every ``detail`` value redacted: the one gate
    between the decoders and everything that stores or shows a step.

    The normalisers redact before they derive (the canonical action and the egress
    targets come from redacted arguments; excerpts are redacted before they are cut);
    this gate makes it true of *every* field whatever a decoder put there. Redaction is
    idempotent, so an already redacted field comes out as it went in (one scan: the
    prefilter, or the rules finding nothing new). Returns ``step`` itself when nothing
    changed.
    """
    changes: dict[str, Any] = {}
    final = _FINAL
    for name, value in zip(_STEP_TEXT_FIELDS, _step_texts(step), strict=True):
        if value is None:  # most fields of most steps: no isinstance call for them
            continue
        if type(value) is str:
            if value in final or not value:  # what redact returns first thing
                continue
        elif not isinstance(value, str) or not value:
            continue
        safe = redact(value)
        if safe != value:
            changes[name] = safe
    detail = step.detail
    if detail and not (type(detail) is dict and _flat_and_final(detail)):
        redacted = redact_value(detail)
        if redacted != detail:
            changes["detail"] = redacted
    return step.with_(**changes) if changes else step


_step_texts = operator.attrgetter(*_STEP_TEXT_FIELDS)

_SCALARS = frozenset({int, float, bool, type(None)})


def _flat_and_final(detail: dict[Any, Any]) -> bool:
    """Whether ``detail`` holds only numbers, booleans and None (most details: a
    duration, token counts) under keys :func:`redact` leaves as they are: then
    :func:`redact_value` returns an equal dict (only the keys are text), so the gate keeps
    the step's own without building that copy."""
    for key, value in detail.items():
        if type(value) not in _SCALARS or (isinstance(key, str) and redact(key) != key):
            return False
    return True


def redact_dead_letter(letter: DeadLetter) -> DeadLetter:
    """``letter`` with its reason, location and payload redacted.

    The payload is kept whole otherwise: it is read as UTF-8 with undecodable bytes
    carried through unchanged (``surrogateescape``), so only a recognised secret's bytes
    change. (A binary payload, protobuf say, then no longer parses: a dead letter is
    kept for a person to read, and a credential must not outlive the batch it came in.)
    """
    text = letter.payload.decode("utf-8", "surrogateescape")
    safe = redact(text)
    payload = letter.payload if safe == text else safe.encode("utf-8", "surrogateescape")
    reason, location = redact(letter.reason), redact(letter.location)
    if payload is letter.payload and reason == letter.reason and location == letter.location:
        return letter
    return replace(letter, payload=payload, reason=reason, location=location)


_FLAT_SMALL_ITEMS = 8
_FLAT_SMALL_CHARS = 512
_FLAT_TYPES = frozenset({str, int, float, bool, type(None)})


def _small_and_flat(obj: Any) -> bool:
    """Whether ``obj`` is a dict of at most :data:`_FLAT_SMALL_ITEMS` str keys whose
    values are scalars or strings of at most :data:`_FLAT_SMALL_CHARS` characters (most
    tool arguments: a command or a path and a description). Walking such a dict costs
    about what :func:`_may_hold_secret`'s scan of its JSON costs, and that scan finds a
    trigger in most (``://``, ``token``, ``ez``), after which the walk runs anyway: so
    :func:`redact_value` walks it directly. The result is the same either way: a key
    that names a secret holds a trigger (``tests/unit/features/test_redact.py`` checks it)."""
    if type(obj) is not dict or len(obj) > _FLAT_SMALL_ITEMS:
        return False
    for key, value in obj.items():
        kind = type(value)
        if type(key) is not str or kind not in _FLAT_TYPES:
            return False
        if kind is str and len(value) > _FLAT_SMALL_CHARS:
            return False
    return True


def _may_hold_secret(obj: Any) -> bool:
    """Whether any string (or key) inside ``obj`` holds a trigger of some rule: one scan
    of its JSON text instead of one prefilter call per string (a 1 MiB minified JSON
    argument holds ~100k strings). JSON escaping never splits a trigger (no trigger holds
    a quote, backslash or control character), and a key that names a secret holds a
    trigger too (``pass``, ``token``, ``key`` …), so False means nothing to redact."""
    try:
        text = _scan_json(obj)
    except (TypeError, ValueError, RecursionError):
        return True
    return _has_candidate(text.lower())


_scan_json = json.JSONEncoder(ensure_ascii=False, default=str).encode
"""``json.dumps(obj, ensure_ascii=False, default=str)`` with its encoder built once
(``dumps`` with arguments builds one per call, ~1 µs): the same text."""


def _copy(obj: Any, _depth: int = 0) -> Any:
    """The deep copy :func:`redact_value` returns when there is nothing to redact."""
    if _depth > 64 and not isinstance(obj, str):  # as redact_value does
        return _marker("too_deep")
    if isinstance(obj, Mapping):
        return {key: _copy(value, _depth + 1) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_copy(v, _depth + 1) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_copy(v, _depth + 1) for v in obj)
    return obj
