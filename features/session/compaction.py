"""Inferred context compaction: a conversation's input tokens falling sharply.

Runtimes that compact (summarise) their context do not always say so. The
sign they cannot hide is the next model call's prompt: input tokens grow call
after call while history accumulates, and drop when history is replaced by a
summary. The rule, per conversation (a session's agent context):

    previous input tokens >= ``min_tokens``  and
    current input tokens  <= previous * (1 - ``drop``)  and
    no explicit compaction since the previous model call

infers a compaction between the two calls. Defaults: ``drop=0.5`` (the
prompt at least halves) and ``min_tokens=32_000``: runtimes compact near their
window's limit, and below that prompt sizes swing with tool outputs and planner
calls. Measured on the TRAIL GAIA traces, which contain no compaction: 16k gave
5 false inferences in 113 traces, 32k gives none (``trajwatch replay`` then
``SELECT ... WHERE kind='compaction'``). A sub-agent with its own short context
also looks like a drop, which is why conversations are keyed by context.

Signalled compaction (:meth:`CompactionInference.signalled`): the GenAI conventions mark an
inference whose context is a compacted view of a prior conversation
(``gen_ai.conversation.compacted``, set on every such call by some instrumentations and
on the first one only by others) and carry the compaction as a message part. A
compaction is signalled by the *change*: a call marked compacted after one that was not
(in the same conversation), or a compaction part not seen before. An explicit
compaction step just before explains the next signal.

Replaced history (:meth:`CompactionInference.replaced`): a conversation only grows by
appending, so the first user message of its input stays the same call after call and the
input tokens do not fall. When a call's first user message is a different one *and* its
input is smaller than the previous call's, the history before it was replaced — by a
summary ("This session is being continued from a previous conversation…", in whatever
words or language the runtime uses) or by a reset. This needs no size threshold: a new
turn appended to the history grows the input, and an instrumentation that reports only the
latest message gives a different head with a growing input, so neither looks replaced.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class InferredCompaction:
    tokens_before: int
    tokens_after: int


class CompactionInference:
    """Per-session state for the rule above; one instance per session.

    >>> c = CompactionInference()
    >>> [c.model_call("main", t) for t in (20_000, 40_000, 9_000)]
    [None, None, InferredCompaction(tokens_before=40000, tokens_after=9000)]
    """

    def __init__(self, *, drop: float = 0.5, min_tokens: int = 32_000) -> None:
        if not 0 < drop < 1:
            raise ValueError(f"drop must be in (0, 1), got {drop}")
        if min_tokens < 1:
            raise ValueError(f"min_tokens must be >= 1, got {min_tokens}")
        self.drop = drop
        self.min_tokens = min_tokens
        self._last: dict[str, int] = {}
        self._explicit = False
        self._compacted: dict[str, str] = {}
        """conversation → the compaction state of its last call: "" not compacted, "flag"
        marked compacted, else the id of the last compaction part seen."""
        self._signal_explained = False
        self._heads: dict[str, bytes] = {}
        """conversation → digest of the first user message of its last call that had one."""

    def replaced(self, conversation: str, first_user: str | None, tokens_in: int | None) -> bool:
        """Feed one model call's first user message (before :meth:`model_call`); True when
        its history was replaced since the previous call (see the module docstring).

        >>> c = CompactionInference()
        >>> [c.replaced("main", m, t) or c.model_call("main", t) is not None for m, t in
        ...  (("fix the bug", 9_000), ("fix the bug", 12_000), ("summary: fixed half", 7_000))]
        [False, False, True]
        """
        if not first_user:
            return False
        digest = hashlib.blake2b(first_user.encode("utf-8", "replace"), digest_size=8).digest()
        previous = self._heads.get(conversation)
        self._heads[conversation] = digest
        if len(self._heads) > 64:
            self._heads.pop(next(iter(self._heads)))
        last = self._last.get(conversation)
        if previous is None or previous == digest or tokens_in is None or last is None:
            return False
        if tokens_in >= last or self._explicit:
            return False
        self._explicit = True  # this compaction explains the drop: model_call infers none
        return True

    def explicit(self) -> None:
        """An explicit compaction was seen: the next drop and signal are explained already."""
        self._explicit = True
        self._signal_explained = True

    def signalled(self, conversation: str, compacted: bool, part_id: str | None) -> bool:
        """Feed one model call's compaction signals (see the module docstring); True when
        they say a compaction happened before this call.

        >>> c = CompactionInference()
        >>> [c.signalled("main", f, p) for f, p in
        ...  ((False, None), (True, None), (True, None), (True, "c1"), (True, "c1"), (True, "c2"))]
        [False, True, False, False, False, True]
        """
        previous = self._compacted.get(conversation, "")
        if part_id is not None:
            # a part after a flag-only call is the part of the compaction the flag announced
            new = part_id != previous and previous != "flag"
            state = part_id
        elif compacted:
            new = previous == ""
            state = previous or "flag"
        else:
            new, state = False, ""
        self._compacted[conversation] = state
        if len(self._compacted) > 64:
            self._compacted.pop(next(iter(self._compacted)))
        if not (compacted or part_id):
            return False
        explained, self._signal_explained = self._signal_explained, False
        if new and not explained:
            self._explicit = True  # the compaction this signal reports explains the drop
            return True
        return False

    def last_tokens(self, conversation: str) -> int | None:
        """The input tokens of the conversation's last model call, if known."""
        return self._last.get(conversation)

    def model_call(self, conversation: str, tokens_in: int | None) -> InferredCompaction | None:
        """Feed one model call's input tokens; returns the compaction it reveals, if any."""
        if tokens_in is None:
            return None
        previous = self._last.get(conversation)
        self._last[conversation] = tokens_in
        explained, self._explicit = self._explicit, False
        if (
            previous is not None
            and not explained
            and previous >= self.min_tokens
            and tokens_in <= previous * (1 - self.drop)
        ):
            return InferredCompaction(previous, tokens_in)
        return None

    def state_dict(self) -> dict[str, object]:
        return {
            "last": dict(self._last),
            "explicit": self._explicit,
            "compacted": dict(self._compacted),
            "signal_explained": self._signal_explained,
            "heads": {k: v.hex() for k, v in self._heads.items()},
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        last = state.get("last", {})
        self._last = {str(k): int(v) for k, v in last.items()} if isinstance(last, dict) else {}
        self._explicit = bool(state.get("explicit", False))
        compacted = state.get("compacted", {})
        self._compacted = (
            {str(k): str(v) for k, v in compacted.items()} if isinstance(compacted, dict) else {}
        )
        self._signal_explained = bool(state.get("signal_explained", False))
        heads = state.get("heads", {})
        self._heads = (
            {str(k): bytes.fromhex(str(v)) for k, v in heads.items()}
            if isinstance(heads, dict)
            else {}
        )
