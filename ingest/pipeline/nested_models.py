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
before its model parent (remembered under that parent's id, for the 4096 most recent
parents not read yet) are taken back while the ordering stage still holds them (within
the lateness window). One released already (its parent came after the window) stays.
"""

from __future__ import annotations

from collections import OrderedDict
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


class NestedModels:
    """Finds, batch by batch, the model spans a model parent covers where child and parent
    are not in one batch (that case the span mapping handles). Remembers the model spans
    read before their parent, per parent (the ``max_parents`` most recent), so a batch
    costs its own size, not its traces'."""

    def __init__(self, max_parents: int = 4096) -> None:
        self.max_parents = max_parents
        self._waiting: OrderedDict[tuple[str, str], set[str]] = OrderedDict()
        """(trace id, parent span id not read yet) → model spans under it."""

    def read(self, batch: Sequence[SpanRecord], traces: TraceIndex) -> Nested:
        """The nested model spans of ``batch`` and of the spans before it; ``traces`` must
        have observed ``batch`` already (with roles)."""
        found = Nested()
        in_batch = {span.span_id for span in batch}
        for span in batch:
            waiting = self._waiting.pop((span.trace_id, span.span_id), None)
            tree = traces.tree(span.trace_id)
            if tree is None:
                continue
            parents, roles = tree
            if roles.get(span.span_id) != MODEL:
                continue
            if waiting:
                found.before.update((span.trace_id, child) for child in waiting)
            parent = span.parent_span_id
            if not parent or parent in in_batch:
                continue
            if roles.get(parent) == MODEL:
                found.here.add(span.span_id)
            elif parent not in parents:  # not read yet: it may be a model call's span
                self._wait(span.trace_id, parent, span.span_id)
        return found

    def _wait(self, trace_id: str, parent: str, span_id: str) -> None:
        key = (trace_id, parent)
        self._waiting.setdefault(key, set()).add(span_id)
        self._waiting.move_to_end(key)
        while len(self._waiting) > self.max_parents:
            self._waiting.popitem(last=False)
