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
"""

from __future__ import annotations

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

    def explicit(self) -> None:
        """An explicit compaction was seen: the next drop is explained already."""
        self._explicit = True

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
        return {"last": dict(self._last), "explicit": self._explicit}

    def load_state_dict(self, state: dict[str, object]) -> None:
        last = state.get("last", {})
        self._last = {str(k): int(v) for k, v in last.items()} if isinstance(last, dict) else {}
        self._explicit = bool(state.get("explicit", False))
