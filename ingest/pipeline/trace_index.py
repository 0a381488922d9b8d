"""What the pipeline remembers about recent traces, bounded.

Spans arrive children-first and often without a session attribute; to give an
HTTP span its session and its parent tool call we need the trace's session
and span tree. This index keeps them for the ``max_traces`` most recently
seen traces (least recently used are forgotten first).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ingest.decoded import Draft

MAX_SPANS_PER_TRACE = 20_000


@dataclass(slots=True)
class _Trace:
    session: str | None = None
    resource_session: str | None = None
    """The session its spans' resource names (``session.id`` among the resource
    attributes): read only when no span of the trace names one of its own."""
    parents: dict[str, str | None] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    """Each span's role (:func:`ingest.semconv.spans.span_role`), for the spans whose
    role was given: what :mod:`ingest.pipeline.agent_roles` reads."""
    tool_calls: dict[str, Draft] = field(default_factory=dict)


class TraceIndex:
    def __init__(self, *, max_traces: int) -> None:
        self.max_traces = max_traces
        self._traces: OrderedDict[str, _Trace] = OrderedDict()

    def _get(self, trace_id: str) -> _Trace:
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = self._traces[trace_id] = _Trace()
            if len(self._traces) > self.max_traces:
                self._traces.popitem(last=False)
        else:
            self._traces.move_to_end(trace_id)
        return trace

    def observe_span(
        self,
        trace_id: str,
        span_id: str,
        parent_span_id: str | None,
        session: str | None,
        resource_session: str | None = None,
        role: str | None = None,
    ) -> None:
        """Learn one span's place in its tree (and ``role``, when given) and, if it names
        one, the trace's session (``session``: named by the span itself;
        ``resource_session``: by its resource, the weaker claim, see :meth:`session_of`)."""
        trace = self._get(trace_id)
        if session and trace.session is None:
            trace.session = session
        if resource_session and trace.resource_session is None:
            trace.resource_session = resource_session
        if len(trace.parents) < MAX_SPANS_PER_TRACE:
            trace.parents.setdefault(span_id, parent_span_id)
            if role is not None:
                trace.roles.setdefault(span_id, role)

    def observe_draft(self, draft: Draft) -> None:
        """Learn from one draft: its trace's session and, for tool calls, the call."""
        if not draft.trace_id:
            return
        trace = self._get(draft.trace_id)
        if draft.session_hint and trace.session is None:
            trace.session = draft.session_hint
        if (
            draft.span_id
            and draft.step.kind == "tool_call"
            and len(trace.tool_calls) < MAX_SPANS_PER_TRACE
        ):
            trace.tool_calls[draft.span_id] = draft

    def session_of(self, trace_id: str | None) -> str | None:
        """The trace's session: the first one a span (or a draft) of it named, else the
        first one a span's resource named, else None."""
        if not trace_id:
            return None
        trace = self._traces.get(trace_id)
        return (trace.session or trace.resource_session) if trace else None

    def tree(self, trace_id: str) -> tuple[dict[str, str | None], dict[str, str]] | None:
        """The spans of ``trace_id`` seen so far: span id → parent span id, and span id →
        role (for the spans observed with one); None when the trace is not (or no longer)
        known. Read-only views: the caller must not change them."""
        trace = self._traces.get(trace_id)
        return None if trace is None else (trace.parents, trace.roles)

    def enclosing_tool_call(self, trace_id: str | None, span_id: str | None) -> Draft | None:
        """The nearest ancestor span that is a tool call, if the index has seen it."""
        trace = self._traces.get(trace_id or "")
        if trace is None:
            return None
        current = span_id
        for _ in range(256):
            if current is None:
                return None
            if current in trace.tool_calls:
                return trace.tool_calls[current]
            current = trace.parents.get(current)
        return None
