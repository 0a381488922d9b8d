"""The ordering stage: decoded input into released drafts, in event-time order per
partition, each with its session resolved.

Input arrives per *partition* (a Kafka partition, a recorded file): each partition has
its own event-time :class:`~features.session.ordering.Reorderer`, so one slow source does
not hold up another, and a partition's end flushes what it still holds. Every draft
passes the one gate on the way in (redaction, then :func:`~ingest.pipeline.intake.make_storable`);
the trace index learns each span's place in its tree and session, so a draft released
later finds its session and an egress step its cause (:mod:`ingest.pipeline.resolution`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from features.redact.engine import redact_step
from features.session.ordering import Reorderer
from ingest.decoded import Draft, SpanRecord
from ingest.pipeline.intake import make_storable
from ingest.pipeline.options import PipelineOptions
from ingest.pipeline.resolution import Resolved, resolve
from ingest.pipeline.stats import Stats
from ingest.pipeline.trace_index import TraceIndex
from ingest.semconv.codeact import CodeMemory
from ingest.semconv.spans import resource_session_hint, session_hint, spans_to_drafts
from models.records import Step
from models.storable import Unstorable


class Ordering:
    """Per-partition ordering buffers, the trace index and what the span mapping
    remembers (:class:`~ingest.semconv.codeact.CodeMemory`), bounded by ``options``. A
    draft that cannot be stored is counted in ``stats`` and handed to ``reject``."""

    def __init__(
        self,
        options: PipelineOptions,
        stats: Stats,
        reject: Callable[[Step, str], None],
    ) -> None:
        self.options = options
        self.stats = stats
        self.reject = reject
        self.arrival = 0
        """The arrival index the next draft gets: the tie-break after event time."""
        self._lateness_ns = options.lateness_ms * 1_000_000
        self._partitions: dict[str, Reorderer[Draft]] = {}
        self._traces = TraceIndex(max_traces=options.max_traces)
        self._code = CodeMemory()
        self._ready: list[Draft] = []

    def add_spans(self, spans: Sequence[SpanRecord], *, partition: str, position: int) -> None:
        """Learn the spans' trees and sessions, then order the drafts they map to."""
        attribute = self.options.session_attribute
        for span in spans:
            self._traces.observe_span(
                span.trace_id,
                span.span_id,
                span.parent_span_id,
                session_hint(span, attribute),
                resource_session_hint(span, attribute),
            )
        self.add_drafts(
            spans_to_drafts(
                spans, session_attribute=attribute, arrival=self.arrival, memory=self._code
            ),
            partition=partition,
            position=position,
        )

    def add_drafts(self, drafts: Iterable[Draft], *, partition: str, position: int) -> None:
        """Put ``drafts`` (read at input ``position``) in event-time order on
        ``partition``, after the gate; release what the partition's watermark passed."""
        reorderer = self._partitions.get(partition)
        if reorderer is None:
            reorderer = self._partitions[partition] = Reorderer(lateness_ns=self._lateness_ns)
        for draft in drafts:
            self.stats.drafts += 1
            # The one gate every step passes: nothing a decoder left unredacted goes on.
            draft.step = redact_step(draft.step)
            try:
                make_storable(draft)
            except Unstorable as error:
                self.stats.drafts_unstorable += 1
                self.reject(draft.step, error.reason)
                continue
            draft.arrival = self.arrival
            draft.position = position
            self.arrival += 1
            self._traces.observe_draft(draft)
            reorderer.push(draft.step.ts, draft)
        self._ready.extend(reorderer.pop_ready())

    def partitions(self) -> list[str]:
        """The partitions holding ordering state."""
        return list(self._partitions)

    def end_partition(self, partition: str) -> None:
        """The partition has no more input: release all it holds."""
        reorderer = self._partitions.pop(partition, None)
        if reorderer is not None:
            self._ready.extend(reorderer.flush())

    def held(self) -> int:
        """Drafts held for ordering or released and not yet taken."""
        return len(self._ready) + sum(len(r) for r in self._partitions.values())

    def newest_event_time(self, partition: str) -> int | None:
        """The newest event time ``partition`` has seen since it was opened (its
        watermark plus the lateness); None when it holds no ordering state."""
        reorderer = self._partitions.get(partition)
        return None if reorderer is None else reorderer.max_ts

    def resume_partition(self, partition: str, *, newest_event_time: int) -> None:
        """Open ``partition`` as one that had seen ``newest_event_time`` already."""
        reorderer = self._partitions[partition] = Reorderer(lateness_ns=self._lateness_ns)
        reorderer.max_ts = newest_event_time

    def held_from(self, partition: str) -> int | None:
        """The earliest input position of a draft ``partition`` still holds, or None."""
        reorderer = self._partitions.get(partition)
        if reorderer is None:
            return None
        return min((draft.position for draft in reorderer.items()), default=None)

    def resolve(self) -> list[Resolved]:
        """Take every released draft, with its session resolved (and an egress step's
        cause looked up)."""
        ready, self._ready = self._ready, []
        traces = self._traces
        return [resolve(draft, traces) for draft in ready]
