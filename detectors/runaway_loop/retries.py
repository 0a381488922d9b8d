"""Loop rules judged by results, over their small records (:mod:`detectors.runaway_loop.detector`).

- **Retry after failure**: failures of near-same calls (or of calls that only vary their
  values, when the error names one failure) with the same error signature join a
  :class:`~detectors.runaway_loop.records.FailureChain` (:func:`add_failure`); a success of a
  call the chain tried ends it (:func:`end_chains`); :func:`retry_finding` says when
  the failures are waste.
- **The same answer to changing arguments**: :func:`same_answer` extends or restarts
  the run of :class:`~detectors.runaway_loop.records.SameAnswers`.
- **One request re-worded**: :func:`reasked` extends or restarts the run of calls
  re-wording one request.

Each function changes only the records it is given (the detector's ledgers) and returns
a :class:`Finding` when a rule fires; the detector turns findings into alerts (severity
from its limits, the spend since the onset, one alert per loop). No I/O, no clock.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from detectors.base import MAX_EVIDENCE
from detectors.runaway_loop.cycles import near, request_words
from detectors.runaway_loop.patience import patient
from detectors.runaway_loop.records import FailureChain, LoopCall, SameAnswers
from detectors.runaway_loop.rules import (
    SIGNATURE_CHARS,
    is_request,
    result_signature,
    same_shape,
    specific,
)
from features.calls.action_keys import crc
from features.text.hosts import network_address

__all__ = [
    "Finding",
    "add_failure",
    "all_new",
    "end_chains",
    "names_only",
    "reasked",
    "refilled",
    "retry_finding",
    "retry_waits",
    "same_answer",
]


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule fired: its onset, evidence, the loop's identities, the reason (without the
    spend since the onset), the repeats counted, and how it may escalate: ``kill_at``
    repeats kill (None: the detector's ``critical_cycles``), never when ``warn_only``."""

    onset: LoopCall
    evidence: list[LoopCall]
    keys: set[int]
    reason: str
    count: int
    kill_at: int | None = None
    warn_only: bool = False


def _trim(members: list[LoopCall]) -> None:
    """Keep the first, the onset and the latest ``MAX_EVIDENCE`` members."""
    if len(members) > MAX_EVIDENCE:
        del members[2 : len(members) - MAX_EVIDENCE + 2]


# -- retry after failure -----------------------------------------------------------------


def end_chains(chains: dict[int, FailureChain], call: LoopCall) -> None:
    """A call worked: end the chains it ends. A call that had failed now worked (it was
    transient); or, for failures of changing arguments, the tool works with others (the
    agent is searching)."""
    for error in [
        e
        for e, c in chains.items()
        if any(m.key == call.key for m in c.members)
        or (c.by_shape and same_shape(c.first.tool, c.first.names, call.tool, call.names))
    ]:
        del chains[error]


def add_failure(
    chains: dict[int, FailureChain],
    call: LoopCall,
    text: str,
    novel: int,
    max_chains: int,
    before: LoopCall | None = None,
) -> FailureChain:
    """Record ``call``'s failure (``text``: its error and what it printed) in the chain of
    its error signature, or a new chain; ``novel`` is the count of new calls the session
    has tried so far; ``before`` the last earlier run of the same call, if any: when it
    failed otherwise, a new chain starts from news (``moved``: a poll watching a world
    that moves). Sets ``call.error`` and ``call.chain``; keeps at most ``max_chains``."""
    # measured: what a failure printed is part of it (`2 of 6 ready`), its timings not
    signature = result_signature(text, call.values, measured=True)
    error = crc(f"{call.tool}\x1f{signature}")
    call.error = error
    chain = chains.get(error)
    is_near = chain is not None and near(chain.first, call)
    # the same specific failure of a call varying its values (a page, an offset, a
    # query, a flag's value): judged by the result, not the changed arguments
    shaped = (
        chain is not None
        and not is_near
        and specific(signature)
        and same_shape(chain.first.tool, chain.first.names, call.tool, call.names)
    )
    if chain is not None and (is_near or shaped):
        # new calls tried since the last failure, not counting this retry itself
        chain.novel_between += novel - chain.novel_mark - call.novel
        chain.by_shape = chain.by_shape or shaped
    else:
        # the signature masks echoed arguments (``<arg> failed``), so the identity
        # also names the first call: `npm install` and `cargo build` are two loops
        chain = FailureChain(
            error=error,
            error_text=" ".join(text.split())[:80],
            first=call,
            ident=crc(f"{error}\x1f{call.key}"),
            moved=before is not None and before.status == "error" and before.error != error,
        )
        chains.pop(error, None)
        while len(chains) >= max_chains:
            del chains[next(iter(chains))]
    chains[error] = chain
    call.chain = chain.ident
    chain.novel_mark = novel
    chain.count += 1
    chain.members.append(call)
    _trim(chain.members)
    return chain


def retry_waits(members: list[LoopCall]) -> list[float]:
    """The deliberate waits before each retry of ``members`` (in order): the seconds
    the calls from one member to the next slept (``LoopCall.wait`` is the session's
    running total)."""
    return [b.wait - a.wait for a, b in itertools.pairwise(members)]


def retry_finding(
    chain: FailureChain, call: LoopCall, warn_cycles: int, patience: int = 6
) -> Finding | None:
    """Whether the chain's failures are waste: a bare retry that fails the same way
    already is (TRAIL labels it); with other work between the failures, the repeats
    must outnumber it by two. Retries that wait longer each time (back-off:
    :func:`~detectors.runaway_loop.progress.patient`) are patience until ``patience``
    failures: a wait slept between them, or attempts that each ran longer than the one
    before (a growing ``--timeout``, a client backing off inside the call). A chain that
    began with news (``moved``) needs one bare retry more."""
    failures = chain.count
    members = chain.members
    # after news the back-off starts again: the attempts since the first may be patient
    runs = (members, members[1:]) if chain.moved else (members,)
    # the waits between the call's runs, whatever the runs between the members answered
    # (a 503 between two 429s is an attempt of the same back-off)
    since = [c.since for c in members if c.since >= 0]
    if failures <= patience and (
        patient(retry_waits(members), patience)
        or patient(since, patience)
        or any(len(m) >= 2 and patient([c.took for c in m], patience) for m in runs)
    ):
        return None
    # a poll whose answer just moved is looked at again: a bare retry is waste from the
    # second repeat of the news, not the first
    bare = failures >= 2 + chain.moved and chain.novel_between == 0
    outweighed = failures >= warn_cycles and chain.novel_between <= failures - 2
    if not (bare or outweighed):
        return None
    tried = (
        f", with {chain.novel_between} other new call(s) tried between them"
        if chain.novel_between
        else ", retried with nothing else tried"
    )
    if chain.by_shape:
        what = (
            f"{failures} calls of `{call.tool}` with changing arguments (`{chain.first.label}`"
            f" … `{call.label}`) got the same failure `{chain.error_text}` (the same once "
            "their own arguments, paths and ids are masked)"
        )
    else:
        what = (
            f"{failures} near-identical calls `{chain.first.label}` failed with the same "
            f"error `{chain.error_text}`"
        )
    return Finding(chain.members[1], chain.members, {chain.ident}, what + tried, failures)


# -- the same answer to changing arguments -------------------------------------------------


def same_answer(
    answers: SameAnswers | None,
    call: LoopCall,
    text: str,
    *,
    warn_cycles: int,
    critical_read_cycles: int,
) -> tuple[SameAnswers | None, Finding | None]:
    """The run of consecutive successful calls of one tool and shape that vary their
    arguments and get the same answer (``text``), once what echoes the arguments is
    masked (a task re-worded and printed back, a query answered by the same page): no
    call learns anything the first did not. Identical calls are the cycle rules' to
    judge, and calls that write or send are left out (their answer is a receipt).
    Returns the run after ``call`` and a finding from ``warn_cycles`` calls on."""
    if call.acts or not text:
        return None, None
    signature = result_signature(text, call.values)
    call.answer = crc(signature) or 1
    if not specific(signature):
        return None, None
    if (
        answers is None
        or answers.signature != signature
        or not same_shape(answers.first.tool, answers.first.names, call.tool, call.names)
        # a long answer is the same only whole: files that open alike differ further on
        or (len(text) > SIGNATURE_CHARS and call.digest != answers.first.digest)
    ):
        return SameAnswers(signature, call, [call]), None
    last = answers.members[-1]
    if call.exact == last.exact:
        return answers, None  # the same call again: a cycle, not changed arguments
    if names_only(last.values, call.values) or new_target(last, call):
        # another file, id or page, a template's slots refilled: a distinct target
        # read, not one question re-asked
        return SameAnswers(signature, call, [call]), None
    answers.members.append(call)
    answers.count += 1
    _trim(answers.members)
    count = answers.count
    if count < warn_cycles:
        return answers, None
    reason = (
        f"{count} calls of `{call.tool}` with changing arguments (`{answers.first.label}` "
        f"… `{call.label}`) got the same answer `{signature[:80]}` (their own arguments "
        "masked as <arg>): none learnt anything new"
    )
    keys = {crc(f"answer\x1f{signature}\x1f{answers.first.key}")}
    finding = Finding(
        answers.members[1], answers.members, keys, reason, count, critical_read_cycles
    )
    return answers, finding


def names_only(before: tuple[str, ...], after: tuple[str, ...]) -> bool:
    """Whether every argument value that changed from ``before`` to ``after`` is a name
    (one token: a path, an id, a URL, a number) - the call moved to another target -
    rather than a request or code re-written.

    >>> names_only(("f0",), ("f1",)), names_only(("birds 2019",), ("bird count",))
    (True, False)
    """
    changed = set(after) - set(before)
    return bool(changed) and all(len(v.split()) == 1 for v in changed)


def refilled(before: tuple[str, ...], after: tuple[str, ...]) -> tuple[tuple[str, str], ...] | None:
    """The words replaced, (``before``'s, ``after``'s), when every argument value that
    changed from ``before`` to ``after`` is the same words with at most half of them
    replaced where they stood (a template with its slots filled anew: another column,
    table, folder, page or window); None when a value changed otherwise (words added,
    dropped or moved: a request re-worded) or nothing changed.

    >>> refilled(("SELECT day, orders FROM t WHERE dim = 'a1'",),
    ...          ("SELECT day, checkouts FROM t WHERE dim = 'b2'",))
    (('orders', 'checkouts'), ("'a1'", "'b2'"))
    >>> refilled(("bird species lisbon",), ("list of bird species in lisbon",)) is None
    True
    """
    if len(before) != len(after):
        return None
    replaced: list[tuple[str, str]] = []
    for old, new in zip(before, after, strict=True):
        if old == new:
            continue
        a, b = old.split(), new.split()
        if len(a) != len(b):
            return None
        put = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
        if not put or 2 * len(put) > len(b):
            return None
        replaced += put
    return tuple(replaced) if replaced else None


_NO_DIGITS = str.maketrans("", "", "0123456789")
_PUNCTUATION = "\"'?!,.:;()[]"


def new_target(before: LoopCall, call: LoopCall) -> bool:
    """Whether ``call`` asks ``before``'s question of another target rather than asking
    it again: its changed values :func:`refilled` with another name (a table, a folder,
    an id: a word that is not plain letters and differs beyond its digits), or with
    other quantities only (a page, an offset: ``sed -n 6,10p`` for ``sed -n 1,5p``) and
    then told something ``before``'s result did not (another page's lines): decided by
    what the call learnt. Plain words swapped (``history`` for ``founded``) re-word.

    >>> def asked(value, digest=0):
    ...     return LoopCall(1, "1", "", 0, "sh", 1, 1, 0, frozenset(), "sh", False,
    ...                     frozenset({"cmd"}), (value,), True, False, 0, 0, 0, 0.0,
    ...                     digest=digest)
    >>> new_target(asked("tf -chdir=m/a-v2 plan"), asked("tf -chdir=m/b-v2 plan"))
    True
    >>> new_target(asked("logs | sed -n 1,5p", 7), asked("logs | sed -n 6,10p", 7))
    False
    >>> new_target(asked("logs | sed -n 1,5p", 7), asked("logs | sed -n 6,10p", 8))
    True
    >>> new_target(asked("prize first winner history"), asked("prize first winner founded"))
    False

    An address names a host, not a quantity: scanning ``10.0.0.7`` after ``10.0.0.5``
    reads another machine (the same open ports on both is no repeat).

    >>> new_target(asked("nmap -sV 10.0.0.5"), asked("nmap -sV 10.0.0.7"))
    True
    """
    replaced = refilled(before.values, call.values)
    if replaced is None:
        return False
    quantities = True
    for a, b in replaced:
        if network_address(b.strip(_PUNCTUATION)):
            return True  # another host: a sweep of addresses reads a new target each time
        if a.translate(_NO_DIGITS) != b.translate(_NO_DIGITS):
            if not b.strip(_PUNCTUATION).isalpha():
                return True  # another name
            quantities = False  # a plain word swapped: the request re-worded
    return quantities and bool(call.digest and before.digest and call.digest != before.digest)


# -- one request re-worded -------------------------------------------------------------------


def all_new(answered: list[LoopCall]) -> bool:
    """Whether every call of ``answered`` got a successful answer and no two the same
    answer (:attr:`~detectors.runaway_loop.records.LoopCall.answer`: what it says once its
    own arguments echoed back are masked).

    The reason: a request asked again in other words is waste when its answers teach the
    agent nothing - the same answer, its own words printed back, nothing found, an error;
    a run of re-worded requests each answered with something not seen before (``go to
    cabinet 3`` showing what cabinet 3 holds, a query over another slice of a table) is
    exploration making progress.

    >>> from detectors.runaway_loop.records import LoopCall
    >>> def c(digest, status=None):
    ...     return LoopCall(0, "", "", 0, "t", 0, 0, 0, frozenset(), "", True, frozenset(),
    ...                     (), True, False, 0, 0, 0, 0.0, status=status, answer=digest)
    >>> all_new([c(11), c(12), c(13)]), all_new([c(11), c(12), c(11)])
    (True, False)
    >>> all_new([c(11), c(0)]), all_new([c(11), c(12, "error")]), all_new([])
    (False, False, False)
    """
    said = [c.answer for c in answered if c.answer and c.status != "error"]
    return bool(answered) and len(said) == len(answered) == len(set(said))


def reasked(
    asked: list[LoopCall], count: int, call: LoopCall, *, command: bool, warn_cycles: int
) -> tuple[list[LoopCall], int, Finding | None]:
    """The run of calls of one tool and shape back to back, each re-wording the request
    the one before made (its longest argument is words,
    :func:`~detectors.runaway_loop.rules.is_request`:
    a query, a question, a task; the arguments that changed mostly share their words:
    :func:`~detectors.runaway_loop.cycles.near`), with no other call between them: the
    agent did nothing with an answer but ask again. ``command``: the call runs a shell
    command (not a request). A warning once the same request has been asked
    ``warn_cycles`` + 1 times running, or ``warn_cycles`` times when one of them asks
    again, in the same words, what an earlier one of the run asked (the agent has lost
    track of what it tried) - unless, short of that, every answer so far told it
    something new (:func:`all_new`: exploring). A request whose slots were refilled with
    other names (:func:`new_target`) asks another target. Never a kill: re-wording may
    yet find something. Calls that
    write or send are left out (a changed edit is work), and an identical call again is
    the cycle rules' to judge. Returns the run and its count after ``call``."""
    if call.acts or not call.values or not is_request(call.values[0]) or command:
        return [], 0, None
    last = asked[-1] if asked else None
    if (
        last is None
        or not same_shape(last.tool, last.names, call.tool, call.names)
        or not near(last, call)
    ):
        return [call], 1, None
    if call.exact == last.exact:
        return asked, count, None
    if new_target(last, call):
        # the request's slots refilled with other names (another column, another table):
        # the same question of another target, not the request re-worded (its answer is
        # not in yet: slots refilled with quantities only go on as re-wordings)
        return [call], 1, None
    words = request_words(call.values[0])
    again = any(request_words(c.values[0]) == words for c in asked)
    asked.append(call)
    count += 1
    _trim(asked)
    if count < warn_cycles + 1 and not (again and count >= warn_cycles):
        return asked, count, None
    if not again and all_new(asked[:-1]):
        return asked, count, None  # each answer told the agent something new: exploring
    first = asked[0]
    reason = (
        f"{count} calls of `{call.tool}` in a row re-word one request (`{first.label}` "
        f"… `{call.label}`), nothing else done with their answers"
        + ("; one asks again, in the same words, what an earlier one asked" if again else "")
    )
    keys = {crc(f"asked\x1f{first.key}")}
    return asked, count, Finding(asked[1], asked, keys, reason, count, warn_only=True)
