"""A step before the pipeline knows its session and its place in the session.

Decoders produce :class:`Draft` objects; :class:`ingest.pipeline.Pipeline`
resolves the session (explicit id, else the trace's known session, else the
trace id), orders drafts by event time, finalises the step id and assigns
``seq``. Keeping the unresolved parts explicit here is what lets spans arrive
children-first and out of order.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.records import Step


@dataclass(slots=True)
class Draft:
    """``step`` carries everything the source said; ``step.session_id`` may be "".

    Identity: ``natural_key`` (``tool_call/<call_id>``, ``model_call/<response_id>``,
    ``start``, ``end``) makes the same thing seen through two sources one step;
    without it, ``fallback_id`` (built from source ids) is the step id.
    """

    step: Step
    fallback_id: str
    natural_key: str | None = None
    session_hint: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None
    context: str | None = None
    """The context window a model call belongs to (``main`` or a sub-agent's span):
    inferred compaction compares input tokens within one context only."""
    arrival: int = 0
    """Arrival order, the tie-break after event time: deterministic for a given input."""
    position: int = -1
    """Where its input was read (a Kafka offset; -1 when the source keeps no positions)."""

    def step_id_for(self, session_id: str) -> str:
        if self.natural_key:
            return f"{session_id}/{self.natural_key}"
        return self.fallback_id


def compaction_key(tokens_before: int | None, tokens_after: int | None) -> str | None:
    """A compaction reported by both the session log and a span marker is one step:
    it is identified by its token transition when both counts are known."""
    if tokens_before is None or tokens_after is None:
        return None
    return f"compaction/{tokens_before}-{tokens_after}"
