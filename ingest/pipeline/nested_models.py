"""A model call traced twice is one step, whichever of its spans is read first.

A framework's span of a model call often has the provider SDK's span of the same call
under it (Google ADK's ``call_llm`` over ``generate_content``, over OpenLLMetry's
``openai.chat``; LangChain's ``ChatOpenAI.chat`` over ``openai.chat``). The outermost model
span is the call; a model span under a model span gives no step
(:func:`ingest.semconv.spans.spans_to_drafts` drops it when its parent is in the same
batch). An exporter sends spans as they end, so the inner span usually comes first, in
another batch or on another partition: without this, the same call was one step when
replayed from a file and two when exported live (issue 27).

Across batches, the trace index (roles and parents of the spans seen) decides it: an inner
span read after its model parent gives no drafts, and the drafts of an inner span read
before its model parent are taken back while the ordering stage still holds them (within
the lateness window). One released already (its parent came after the window) stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ingest.decoded import SpanRecord
from ingest.pipeline.trace_index import TraceIndex

MODEL = "model"


@dataclass(slots=True)
class Nested:
    """The model spans that a model parent covers, found when a batch is read."""

    here: set[str] = field(default_factory=set)
    """Span ids in the batch whose model parent was read before: their drafts are dropped."""
    before: set[tuple[str, str]] = field(default_factory=set)
    """``(trace id, span id)`` of model spans read before, under a model span of the batch:
    their drafts still held are taken back."""

    def __bool__(self) -> bool:
        return bool(self.here or self.before)


def nested_models(batch: Sequence[SpanRecord], traces: TraceIndex) -> Nested:
    """The model spans of ``batch`` and before it covered by a model parent, where child
    and parent are not both in ``batch`` (that case the span mapping handles). ``traces``
    must have observed ``batch`` already (with roles)."""
    found = Nested()
    in_batch = {span.span_id for span in batch}
    models: dict[str, set[str]] = {}  # trace → its model spans in the batch
    for span in batch:
        tree = traces.tree(span.trace_id)
        if tree is None:
            continue
        parents, roles = tree
        if roles.get(span.span_id) != MODEL:
            continue
        models.setdefault(span.trace_id, set()).add(span.span_id)
        parent = span.parent_span_id
        if parent and parent not in in_batch and roles.get(parent) == MODEL:
            found.here.add(span.span_id)
    for trace_id, here in models.items():
        tree = traces.tree(trace_id)
        if tree is None:
            continue
        parents, roles = tree
        found.before.update(
            (trace_id, span_id)
            for span_id, parent in parents.items()
            if parent in here and span_id not in in_batch and roles.get(span_id) == MODEL
        )
    return found
