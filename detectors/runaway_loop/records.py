"""The records :class:`detectors.runaway_loop.detector.RunawayLoop` keeps: small, bounded, no text.

:class:`LoopCall` is one tool call as the loop rules see it (hashes of its action,
arguments and result, its counters); :class:`FailureChain` a run of near-same calls that
failed the same way; :class:`SameAnswers` a run of calls of one shape that got the same
answer. They live in the detector's state, which checkpoints pickle: each is pickled
under its name in ``detectors.runaway_loop.detector`` (``_Call``, ``_Chain``, ``_Answers``), where
it was defined before the rules moved out, so states written since load unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["FailureChain", "LoopCall", "SameAnswers"]


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


# pickled by the path they had inside the detector's module (see the module docstring)
for _cls, _name in ((LoopCall, "_Call"), (SameAnswers, "_Answers"), (FailureChain, "_Chain")):
    _cls.__module__ = "detectors.runaway_loop.detector"
    _cls.__qualname__ = _name
