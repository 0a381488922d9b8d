"""Silence as a step: the pipeline's clock, handed to a session that has stopped talking.

A worker that dies mid-call sends nothing more: no detector sees a step, so none can say
the session went quiet. The pipeline can, at its edge: each partition's *clock* is the
event time of the newest draft it has released. A session that has not ended and whose
last step is ``first`` (``PipelineOptions.silence_first_ms``) or more behind its
partition's clock gets a ``silence`` step (:attr:`models.records.StepKind.SILENCE`) at
``last + first``, then at each doubling of the silence (``last + 2·first``, ``last +
4·first``, …) up to ``silence_last_ms``. Detectors read it like any step; time still comes
from the step, so they read no wall clock.

Deterministic for a given input: a silence step's event time is a bound crossed
(``last + mark``), never the clock at the moment the pipeline noticed, and the steps are
interleaved with the released drafts in release order (a step due before a draft is placed
before it), so commit batching changes nothing and a replay places the same ones.

Placed once, never moved: its id is ``{session}/silence/{ts}`` and it is stored like any
step; a re-judgement in event-time order (:mod:`ingest.pipeline.rejudge`) places the
stored ones again where their event time puts them (it derives none), but for one the
order contradicts: placed before a step of the session that comes before it in event
time had arrived, it measured its silence from an earlier step, and is dropped. None is due at or
behind the last step the session placed (:func:`next_due`), so a session restored from the
store, or input read again, never gets a second one for the same bound. A silence step
does not move the session's ``last_ts`` (the silence goes on) and carries what it
measured in ``detail.silence_ms`` (its ts minus the last step's).

A session's own steps are no clock for it: a gap it ends itself gets no silence step (the
silence was over before anyone could see it). The clock is per partition: a session is
ticked by the partition its last step came from
(another recording in a replay, or another Kafka partition, keeps its own time), and, in
one process, only while it is live in memory (a session evicted, or not reloaded since a
restart, is ticked again once a step of it returns).

Through Kafka (``trajwatch worker``) the sessions of one input partition are spread over
the repartition topic's partitions (*lanes*); the ordering stage relays each input
partition's clock to every lane (:mod:`ingest.sources.clock_relay`) and the sequencing
stage keeps one clock per (lane, input partition), fed by the relayed marks
(:meth:`~ingest.pipeline.engine.Pipeline.feed_clock`) as well as by its drafts. There
the watch is durable: the sessions with a silence due are stored with the batch that
changed them (:meth:`Clocks.watch` reads them back), so a lane taken over after a
rebalance or a restart, or a session evicted, still gets its silence steps, the same as
one process reading the input partition would place.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from ingest.pipeline.session import LiveSession
from models.records import Step, StepKind

SOURCE = "pipeline"
"""``Step.source`` of a silence step."""

_SILENCE = StepKind.SILENCE


def marks(first_ms: int, last_ms: int) -> tuple[int, ...]:
    """The silences (ns) at which a step is placed: ``first_ms`` doubling up to ``last_ms``;
    none when ``first_ms`` is 0 (silence steps off).

    >>> [m // 1_000_000_000 for m in marks(60_000, 600_000)], marks(0, 600_000)
    ([60, 120, 240, 480], ())
    """
    if first_ms <= 0:
        return ()
    out = []
    mark = first_ms
    while mark <= last_ms:
        out.append(mark * 1_000_000)
        mark *= 2
    return tuple(out)


def next_due(session: LiveSession, bounds: tuple[int, ...]) -> int | None:
    """The event time of ``session``'s next silence step: its last step's time plus the
    first bound that puts it after the last step placed (a silence step included); None
    once the session has ended, has no step, or is past the last bound."""
    if session.info.ended_ts is not None or session.next_seq == 0:
        return None
    placed = session.last_key[0]
    for bound in bounds:
        due = session.last_ts + bound
        if due > placed:
            return due
    return None


def silence_step(session: LiveSession, due: int) -> Step:
    """The silence step of ``session`` at event time ``due``."""
    session_id = session.info.session_id
    return Step(
        step_id=f"{session_id}/silence/{due}",
        session_id=session_id,
        kind=_SILENCE,
        ts=due,
        agent=session.info.agent,
        source=SOURCE,
        detail={"silence_ms": (due - session.last_ts) // 1_000_000},
    )


class Clocks:
    """Per partition: its clock and the silence steps due, a heap of ``(due, session)``.
    An entry is checked when it is taken (:meth:`due_before`): a session that spoke, ended
    or was evicted since it was pushed yields nothing, so entries need no removal."""

    def __init__(self, bounds: tuple[int, ...]) -> None:
        self.bounds = bounds
        self._heaps: dict[str, list[tuple[int, str]]] = {}
        self._parked: dict[str, tuple[str, list[tuple[int, str]]]] = {}
        """Per partition: the entries of one session (its last speaker) that
        :meth:`due_before` took off the heap as due but could not place (that session was
        speaking), kept aside while the same session speaks again, and put back on the
        heap before any other speaker's (or a clock mark's) turn. The heap and these
        together hold exactly the entries the heap alone would: the order entries come
        out in is the same, without taking a long-talking session's entries off the heap
        and pushing them back at each of its steps (quadratic in its steps: one session
        alone on a partition - a recorded file - keeps every entry it ever pushed due)."""
        self._home: dict[str, str] = {}
        """Session → the partition its last step came from."""

    def spoke(self, session: LiveSession, partition: str) -> None:
        """``session`` placed a step read from ``partition``: its silence starts anew."""
        session_id = session.info.session_id
        self._home[session_id] = partition
        due = next_due(session, self.bounds)
        if due is not None:
            heapq.heappush(self._heaps.setdefault(partition, []), (due, session_id))

    def watch(self, partition: str, session_id: str, due: int) -> None:
        """Watch ``session_id``, last heard on ``partition``, for the silence step due at
        ``due`` (what a previous owner stored): not in memory, it is found by ``live``
        in :meth:`due_before`, and skipped there unless its next due is still ``due``."""
        self._home[session_id] = partition
        heapq.heappush(self._heaps.setdefault(partition, []), (due, session_id))

    def home(self, session_id: str) -> str | None:
        """The partition ``session_id``'s last step came from, while it is watched."""
        return self._home.get(session_id)

    def due_before(
        self,
        partition: str,
        ts: int,
        live: Callable[[str], LiveSession | None],
        speaker: str | None,
    ) -> Iterator[tuple[LiveSession, int]]:
        """The silence steps due on ``partition`` strictly before event time ``ts`` (a
        draft of session ``speaker`` about to be placed; None: a relayed clock mark, no
        draft), in order, each with its session (``live`` finds it; None: not in memory).
        The caller places each before taking the next: the next bound is pushed after it
        is placed.

        None is placed in ``speaker`` itself: a session's own step is no clock for its
        silence (it spoke: the silence is over, and nobody could have seen it from the
        outside); its entries wait for another session's step, by which time it has
        spoken and they are stale (unless the draft was a re-delivery)."""
        heap = self._heaps.get(partition)
        parked = self._parked.get(partition)
        if parked is not None and parked[0] == speaker:
            held = parked[1]  # still speaking: its entries stay aside
        else:
            held = []
            if parked is not None:  # another's turn: the heap holds them all again
                del self._parked[partition]
                if heap is not None:
                    for entry in parked[1]:
                        heapq.heappush(heap, entry)
        while heap and heap[0][0] < ts:
            due, session_id = heapq.heappop(heap)
            if session_id == speaker:
                held.append((due, session_id))
                continue
            session = live(session_id)
            if session is None or self._home.get(session_id) != partition:
                continue
            if next_due(session, self.bounds) != due:
                continue  # it spoke, ended or was ticked since: a stale entry
            yield session, due
            following = next_due(session, self.bounds)
            if following is not None:
                heapq.heappush(heap, (following, session_id))
        if heap is not None and held and speaker is not None:
            self._parked[partition] = (speaker, held)

    def forget_session(self, session_id: str) -> None:
        """``session_id`` left memory (evicted): it is ticked again once it returns."""
        self._home.pop(session_id, None)

    def forget(self, keep: Callable[[str], bool]) -> None:
        """Drop the partitions ``keep`` says are gone (ended, their drafts all placed), and
        the sessions whose home they were. ``""`` (drafts fed resolved, with no partition
        of this pipeline's: :meth:`~ingest.pipeline.engine.Pipeline.feed_resolved`) is
        kept."""
        for partition in [p for p in self._heaps if p and not keep(p)]:
            del self._heaps[partition]
            self._parked.pop(partition, None)
        for session_id in [s for s, p in self._home.items() if p and not keep(p)]:
            del self._home[session_id]
