"""The records :class:`detectors.runaway_loop.detector.RunawayLoop` keeps: small, bounded, no text.

:class:`LoopCall` is one tool call as the loop rules see it (hashes of its action,
arguments and result, its counters); :class:`FailureChain` a run of near-same calls that
failed the same way; :class:`SameAnswers` a run of calls of one shape that got the same
answer; :class:`HandBacks` a hand-off made again and handed back the same. They live in
the detector's state, which checkpoints pickle: each is pickled under its name in
``detectors.runaway_loop.detector`` (``_Call``, ``_Chain``, ``_Answers``), where it was
defined before the rules moved out, so states written since load unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Attempts", "FailureChain", "HandBacks", "LoopCall", "Revisits", "SameAnswers"]


@dataclass(slots=True)
class LoopCall:
    """What the detector keeps of one tool call: hashes and counters, no text but a
    short label for reasons."""

    seq: int
    step_id: str
    source_ref: str
    ts: int
    tool: str
    key: int  # near-duplicate key: crc32 of the word bag
    exact: int  # crc32 of the canonical signature
    numbers: int  # crc32 of the numbers in the raw arguments
    words: frozenset[str]
    label: str
    novel: bool  # its key was not in the window before it
    names: frozenset[str]  # its argument names (same_shape)
    values: tuple[str, ...]  # its argument values, masked in its result's signature
    reads: bool  # its tool only reads (loop_rules.critical_needed)
    acts: bool  # it writes a file or sends something: its answer is a receipt
    # session totals before the model call that chose this call (as of the last result)
    tokens: int  # tokens in + out
    out_tokens: int  # output tokens
    models: int  # model calls
    cost: float
    status: str | None = None  # of its result, once seen
    head: int | None = None  # crc32 of the result's first line; None when no text
    body: int | None = None  # crc32 of the result's first _BODY characters
    error: int = 0  # crc32 of tool + error signature, when it failed
    chain: int = 0  # identity of the failure chain it joined (its error and first call)
    checked: bool = False  # cycle rules evaluated for it
    # progress (detectors.runaway_loop.progress): what its result said and what it changed
    digest: int = 0  # information_digest of its result (error and output); 0 when unknown
    shape: int = 0  # failure_shape of a failed result (its digits dropped)
    wait: float = 0.0  # seconds it deliberately waits (sleep in its command, a wait tool)
    changes: bool = False  # it changes the workspace or the world (an edit, a patch, a send)
    targets: frozenset[str] = frozenset()  # what it changes, where its arguments name it
    delegates: bool = False  # while it was open another agent reasoned: it runs a sub-agent
    results_at: int = 0  # tool results the session had seen when it was made
    took: float = 0.0  # seconds from the call to its result: the time it ran (or waited)
    news: bool = False  # it failed otherwise than the same call's run before it
    since: float = -1.0  # seconds waited since the same call's run before it (-1: none)
    tally: int = -1  # the one count a failure's short first line reports (-1: none)
    # crc32 of what its successful answer says, its own arguments masked
    # (retries.same_answer); 0 for none (no answer yet, a failure, a receipt)
    answer: int = 0


@dataclass(slots=True)
class SameAnswers:
    """Consecutive successful calls of one tool and shape, arguments changing, that got
    the same answer (their own arguments masked)."""

    signature: str
    first: LoopCall
    members: list[LoopCall] = field(default_factory=list)
    count: int = 1


@dataclass(slots=True)
class FailureChain:
    """Failures of near-same calls with the same error."""

    error: int
    error_text: str
    first: LoopCall
    ident: int  # the loop's identity: its error, and the call that first failed so
    by_shape: bool = False  # a member joined by its result alone, its arguments changed
    members: list[LoopCall] = field(default_factory=list)
    count: int = 0
    novel_mark: int = 0  # the detector's novel-call count at the last failure
    novel_between: int = 0  # new calls tried between the failures
    moved: bool = False  # its first failure was news: the same call had failed otherwise before


@dataclass(slots=True)
class Attempts:
    """One check (the same call: a test run, a status, a verification) failing the same
    way while the work between its runs changes only what was already changed: attempts
    at one sub-goal that are not getting closer."""

    check: LoopCall  # the check's latest run
    first: LoopCall  # the first failed run of this series
    shape: int  # how it fails, each time (features.calls.information.failure_shape)
    changed: int  # targets the session had changed when the series began
    members: list[LoopCall] = field(default_factory=list)
    count: int = 1  # failed runs of the check, all alike
    attempts: int = 0  # changes made between them


@dataclass(slots=True)
class Revisits:
    """Successful changes alternating between two states (A-B-A-B: a revision and its
    reversal, resubmitted in turn), each returning to the state made two changes before."""

    members: list[LoopCall] = field(default_factory=list)
    count: int = 0  # changes that returned to the state two changes before


@dataclass(slots=True)
class HandBacks:
    """One hand-off (a call that ran a sub-agent, ``LoopCall.delegates``) made again and
    again, its sub-agent handing back the same result each time while nothing new was
    changed: agents passing one task back and forth."""

    digest: int  # what the sub-agent handed back (information_digest), each time
    changed: int  # targets the session had changed at the first hand-back of the run
    members: list[LoopCall] = field(default_factory=list)
    count: int = 1  # hand-backs alike in a row


# pickled by the path they had inside the detector's module (see the module docstring)
for _cls, _name in (
    (LoopCall, "_Call"),
    (SameAnswers, "_Answers"),
    (FailureChain, "_Chain"),
    (Attempts, "_Attempts"),
    (Revisits, "_Revisits"),
    (HandBacks, "_HandBacks"),
):
    _cls.__module__ = "detectors.runaway_loop.detector"
    _cls.__qualname__ = _name
