"""The ordering stage: decoded input into released drafts, in event-time order per
partition, each with its session resolved.

Input arrives per *partition* (a Kafka partition, a recorded file): each partition has
its own event-time :class:`~features.session.ordering.Reorderer`, so one slow source does
not hold up another, and a partition's end flushes what it still holds. Every draft
passes the one gate on the way in (redaction, then :func:`~ingest.pipeline.intake.make_storable`);
the trace index learns each span's place in its tree and session, so a draft released
later finds its session and an egress step its cause (:mod:`ingest.pipeline.resolution`).

Whether an agent span is the session's run or a sub-agent is decided from its trace's
tree (:mod:`ingest.pipeline.agent_roles`), not from its batch: an agent whose ancestry
has not arrived is *held* (its span, not yet mapped to drafts), and its partition
releases nothing at or after the agent's start until it is decided, so the steps come
out in the same order whatever the batching. A held agent is decided when its
ancestry arrives (from any partition), else once the partition's newest event time
passes its end by the lateness, else at the partition's end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from features.redact.engine import redact_step
from features.session.ordering import Reorderer
from ingest.decoded import Draft, SpanRecord
from ingest.pipeline.agent_roles import MAIN, UNDECIDED, agent_role, settled_role
from ingest.pipeline.event_order import tie_key
from ingest.pipeline.intake import make_storable
from ingest.pipeline.nested_models import NestedModels
from ingest.pipeline.options import PipelineOptions
from ingest.pipeline.resolution import Resolved, resolve
from ingest.pipeline.stats import Stats
from ingest.pipeline.trace_index import TraceIndex
from ingest.semconv.codeact import CodeMemory
from ingest.semconv.dialects import restate
from ingest.semconv.spans import (
    agent_span_drafts,
    resource_session_hint,
    session_hint,
    span_role,
    spans_to_drafts,
)
from models.records import Step, StepKind
from models.storable import Unstorable


@dataclass(slots=True)
class _Held:
    """An agent span whose role is not decided yet, held with where it was read."""

    span: SpanRecord
    position: int


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
        self._nested = NestedModels()
        self._ready: list[Draft] = []
        self._held: dict[str, list[_Held]] = {}
        """Per partition, the agent spans held until their role is decided."""
        self._retracted: list[str] = []

    def add_spans(self, spans: Sequence[SpanRecord], *, partition: str, position: int) -> None:
        """Learn the spans' trees and sessions, then order the drafts they map to."""
        attribute = self.options.session_attribute
        batch = restate(spans)
        agents: list[SpanRecord] = []
        for span in batch:
            role = span_role(span)
            if role == "agent" or role == "workflow":
                agents.append(span)
            self._traces.observe_span(
                span.trace_id,
                span.span_id,
                span.parent_span_id,
                session_hint(span, attribute),
                resource_session_hint(span, attribute),
                role,
            )
        main: set[str] = set()
        held: set[str] = set()
        for span in agents:
            decided = self._role(span)
            if decided is UNDECIDED:
                held.add(span.span_id)
                self._held.setdefault(partition, []).append(_Held(span, position))
            elif decided == MAIN:
                main.add(span.span_id)
        # agents held before, whose ancestry may have come with this batch
        changed = self._decide_held(settle=False)
        drafts = spans_to_drafts(
            batch,
            session_attribute=attribute,
            arrival=self.arrival,
            memory=self._code,
            main=main,
            held=held,
            restated=True,
        )
        retracted = self._code.take_retracted()
        if retracted:  # before the drafts that replace them go on
            self._retract(set(retracted))
        nested = self._nested.read(batch, self._traces)
        if nested:
            drafts = [d for d in drafts if d.span_id not in nested.here]
            self._take_back(nested.before)
        self.add_drafts(drafts, partition=partition, position=position)
        for other in changed - {partition}:
            self._release(other)

    def _take_back(self, spans: set[tuple[str, str]]) -> None:
        """Drop the drafts of ``spans`` (trace id, span id) still held or released and not
        yet taken (:mod:`ingest.pipeline.nested_models`)."""
        if not spans:
            return

        def covered(draft: Draft) -> bool:
            return (draft.trace_id or "", draft.span_id or "") in spans

        for reorderer in self._partitions.values():
            self.stats.drafts_nested += reorderer.discard(covered)
        kept = [draft for draft in self._ready if not covered(draft)]
        self.stats.drafts_nested += len(self._ready) - len(kept)
        self._ready = kept

    def _retract(self, ids: set[str]) -> None:
        """Drop the drafts of ``ids`` (a CodeAct step's, mapped again with a traced call
        read after it: :class:`~ingest.semconv.codeact.CodeMemory`) still held or released
        and not yet taken, and keep them for :meth:`take_retracted`."""

        def retracted(draft: Draft) -> bool:
            return not draft.natural_key and draft.fallback_id in ids

        for reorderer in self._partitions.values():
            reorderer.discard(retracted)
        self._ready = [draft for draft in self._ready if not retracted(draft)]
        # a copy may have been taken before (a re-delivered step): the store is asked
        self._retracted.extend(sorted(ids))

    def take_retracted(self) -> list[str]:
        """The step ids of the drafts retracted (what a CodeAct step's drafts were before a
        traced call read after them): the sequencing stage deletes those it stored, and
        their session is judged again when it settles. Taken once."""
        retracted, self._retracted = self._retracted, []
        return retracted

    def _role(self, span: SpanRecord) -> str | None:
        tree = self._traces.tree(span.trace_id)
        return agent_role(tree, span.span_id) if tree is not None else UNDECIDED

    def _decide_held(self, *, settle: bool, only: str | None = None) -> set[str]:
        """Map the held agents now decided (``only``'s, else every partition's; all of
        them when ``settle``) to drafts and push them on their partition, unreleased;
        returns the partitions that had one decided. Without ``settle``, an agent is also
        settled once its partition's newest event time is past its end by the lateness
        (its parent, which ends after it, had the window to come)."""
        changed: set[str] = set()
        for partition in [only] if only is not None else list(self._held):
            waiting = self._held.get(partition, [])
            reorderer = self._partitions.get(partition)
            newest = reorderer.max_ts if reorderer is not None else None
            keep: list[_Held] = []
            for item in waiting:
                span = item.span
                role = self._role(span)
                late = newest is not None and newest > span.end_ns + self._lateness_ns
                if role is UNDECIDED and (settle or late):
                    role = settled_role(self._traces.tree(span.trace_id), span.span_id)
                if role is UNDECIDED:
                    keep.append(item)
                    continue
                drafts = agent_span_drafts(
                    span,
                    main=role == MAIN,
                    session_attribute=self.options.session_attribute,
                    arrival=self.arrival,
                )
                self._push(drafts, partition=partition, position=item.position)
                changed.add(partition)
            if keep:
                self._held[partition] = keep
            else:
                self._held.pop(partition, None)
        return changed

    def add_drafts(self, drafts: Iterable[Draft], *, partition: str, position: int) -> None:
        """Put ``drafts`` (read at input ``position``) in event-time order on
        ``partition``, after the gate; release what the partition's watermark passed
        (and no held agent holds back)."""
        self._push(drafts, partition=partition, position=position)
        if partition in self._held:
            self._decide_held(settle=False, only=partition)
        self._release(partition)

    def _release(self, partition: str) -> None:
        reorderer = self._partitions.get(partition)
        if reorderer is None:
            return
        held = self._held.get(partition)
        barrier = min(item.span.start_ns for item in held) if held else None
        self._ready.extend(reorderer.pop_ready(before=barrier))

    def _push(self, drafts: Iterable[Draft], *, partition: str, position: int) -> None:
        reorderer = self._partitions.get(partition)
        if reorderer is None:
            reorderer = self._partitions[partition] = Reorderer(lateness_ns=self._lateness_ns)
        for draft in drafts:
            self.stats.drafts += 1
            # The one gate every step passes: nothing a decoder left unredacted goes on.
            draft.step = redact_step(_with_context(draft))
            try:
                make_storable(draft)
            except Unstorable as error:
                self.stats.drafts_unstorable += 1
                self.reject(draft.step, error.reason)
                continue
            draft.arrival = self.arrival
            draft.position = position
            draft.partition = partition
            self.arrival += 1
            self._traces.observe_draft(draft)
            reorderer.push(draft.step.ts, draft, tie_key(draft.step))

    def partitions(self) -> list[str]:
        """The partitions holding ordering state."""
        return list(self._partitions)

    def end_partition(self, partition: str) -> None:
        """The partition has no more input: decide its held agents with what is known,
        and release all it holds."""
        if partition in self._held:
            self._decide_held(settle=True, only=partition)
        reorderer = self._partitions.pop(partition, None)
        if reorderer is not None:
            self._ready.extend(reorderer.flush())

    def held(self) -> int:
        """Drafts held for ordering or released and not yet taken."""
        return (
            len(self._ready)
            + sum(len(r) for r in self._partitions.values())
            + sum(len(held) for held in self._held.values())
        )

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
        positions = [item.position for item in self._held.get(partition, [])]
        if reorderer is not None:
            positions.extend(draft.position for draft in reorderer.items())
        return min(positions, default=None)

    def resolve(self) -> list[Resolved]:
        """Take every released draft, with its session resolved (and an egress step's
        cause looked up)."""
        ready, self._ready = self._ready, []
        traces = self._traces
        return [resolve(draft, traces) for draft in ready]


def _with_context(draft: Draft) -> Step:
    """The draft's step, with the context window it belongs to in its detail when that is
    not the main agent's (``detail.context``): a re-judgement re-infers compactions per
    context from the stored steps (:mod:`ingest.pipeline.rejudge`)."""
    step = draft.step
    context = draft.context
    if context is None or context == "main" or step.kind is not StepKind.MODEL_CALL:
        return step
    return step.with_(detail={**step.detail, "context": context})
