"""Kafka as the source: the two stages of ``trajwatch worker``, as consumer-group members.

Spans reach Kafka as the OpenTelemetry Collector's Kafka exporter writes them: topic
``otlp_spans``, one message a whole ``ExportTraceServiceRequest`` (``otlp_proto``, or
``otlp_json``), keyed by the hex trace id (``partition_traces_by_id``) or not keyed.
Session events (our JSON schema) arrive one a message, keyed by session id. Neither is
partitioned by session, and a session must have one owner (its detectors are stateful),
so the work is split the Kafka Streams way:

1. :class:`OrderingStage` (consumer group ``<group>``) decodes each message, puts the
   drafts of each input partition in event-time order (the pipeline's watermark),
   resolves their sessions, and produces each released draft to the repartition topic
   keyed by its session id (:mod:`ingest.sources.repartition`), in waves each acknowledged
   before the next, so that a repartition partition holds a prefix of the drafts
   released for it, in order, whatever fails (:func:`producer`). It commits an input partition's
   offset only once every draft read below it has been produced and acknowledged: the
   earliest offset it still holds a draft of (:meth:`Pipeline.held_from`), with the
   partition's newest event time in the commit's metadata (sent once the
   acknowledgements are in, and not waited for: a lost commit only means more
   re-reading). After a crash or a rebalance the partition's owner re-reads from
   there with that watermark, which rebuilds the ordering state exactly: what follows
   is released in the order an uninterrupted process would have released it, and what
   it produces twice the next stage drops by step id. (The trace index — a trace's
   session, an egress's enclosing tool call — is rebuilt only from what is re-read.)
2. :class:`SequencingStage` (group ``<group>.sessions``) consumes the repartition topic,
   so every session has one owner: it sequences, judges and stores, the session cursors
   and detector states, the alerts, the sinks' rows (the actions' outbox) and the
   repartition offsets of the batch in **one** store transaction. The store's offsets
   are the truth: on assignment a worker seeks to them, and each batch moves them with a
   compare-and-set (:meth:`StoreUnit.move_offset`), so a worker that lost a partition
   cannot store a batch beside its new owner. Kafka's committed offsets follow the store
   without being waited for (for lag monitoring). A session handed over is reloaded
   whole from the store.

A message that cannot be read becomes a dead letter (location
``kafka:<topic>/<partition>@<offset>``) in the store's table and on the dead-letter
topic (the original bytes, with ``reason``/``location``/``source`` headers). No message
is lost by a crash of either stage, nor stored twice.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.decoded import Decoded
from ingest.formats.table import KAFKA_ENCODINGS, RawRecord, decode
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.options import env
from ingest.pipeline.resolution import Resolved
from ingest.sources.clock_relay import ClockRelay, lane_of
from ingest.sources.repartition import (
    RecordError,
    decode_record,
    encode_clock,
    encode_resolved,
)
from models.errors import ConfigError, UserError
from models.records import DeadLetter
from models.store import Store

log = logging.getLogger("trajwatch.service.worker")

SOURCE = "kafka"
"""Dead letters' ``source``; their location says the topic, partition and offset."""

ENCODINGS = tuple(KAFKA_ENCODINGS)
"""The Collector Kafka exporter's trace encodings that carry OTLP (``otlp_proto``,
``otlp_json``): the spans topic's formats in :data:`ingest.formats.table.FORMATS`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaOptions:
    """Where and how the worker talks to Kafka; the defaults are the Collector's."""

    bootstrap_servers: str = field(
        default="localhost:9092", metadata=env("TRAJWATCH_KAFKA_BOOTSTRAP_SERVERS")
    )
    group_id: str = field(default="trajwatch", metadata=env("TRAJWATCH_KAFKA_GROUP"))
    """The ordering stage's consumer group; the sequencing stage's is ``<group_id>.sessions``."""
    spans_topic: str = field(default="otlp_spans", metadata=env("TRAJWATCH_KAFKA_SPANS_TOPIC"))
    spans_encoding: str = field(
        default="otlp_proto", metadata=env("TRAJWATCH_KAFKA_SPANS_ENCODING")
    )
    events_topic: str = field(
        default="trajwatch_session_events", metadata=env("TRAJWATCH_KAFKA_EVENTS_TOPIC")
    )
    steps_topic: str = field(default="trajwatch_steps", metadata=env("TRAJWATCH_KAFKA_STEPS_TOPIC"))
    """The repartition topic: released drafts keyed by session id."""
    dead_letter_topic: str = field(
        default="trajwatch_dead_letters", metadata=env("TRAJWATCH_KAFKA_DEAD_LETTER_TOPIC")
    )
    partitions: int = field(default=8, metadata=env("TRAJWATCH_KAFKA_PARTITIONS"))
    """Partitions of the topics the worker creates when they are missing: the most
    workers a stage can spread over."""
    replication_factor: int = field(default=1, metadata=env("TRAJWATCH_KAFKA_REPLICATION"))
    idle_flush_ms: int = field(default=5_000, metadata=env("TRAJWATCH_KAFKA_IDLE_FLUSH_MS"))
    """An input partition silent this long (wall clock) releases every draft it holds:
    the watermark only moves with new input. The exporter's batch delay is 5 s."""
    silence: bool = field(default=True, metadata=env("TRAJWATCH_KAFKA_SILENCE"))
    """Silence steps in a worker (``stalled_run``): each input partition's clock relayed
    to the repartition partitions (:mod:`ingest.sources.clock_relay`). ``0``: off, a
    worker places no silence steps."""
    clock_interval_ms: int = field(default=5_000, metadata=env("TRAJWATCH_KAFKA_CLOCK_INTERVAL_MS"))
    """With silence steps on: the least time (wall clock) between two sendings of input
    clocks alone to the repartition partitions (each one more record batch on each), and
    so between two commits of a busy input partition; a silence step is placed up to
    this much later than one process would."""
    session_timeout_ms: int = field(
        default=10_000, metadata=env("TRAJWATCH_KAFKA_SESSION_TIMEOUT_MS")
    )
    """How soon the group notices a dead worker (joining waits about half of it)."""
    max_poll_records: int = field(default=500, metadata=env("TRAJWATCH_KAFKA_MAX_POLL_RECORDS"))
    fetch_max_wait_ms: int = field(default=50, metadata=env("TRAJWATCH_KAFKA_FETCH_MAX_WAIT_MS"))
    """The longest the broker may hold a fetch that finds nothing new. A broker that
    answers a waiting fetch only at this deadline, not when a record arrives (Tansu
    does), delays every record by up to this much at each of the two stages: on Tansu,
    produce to consume took p50 124 ms at Kafka's default of 500, 28 at 100, 12 at 50
    (benchmarks/bench_kafka_fetch.py). An idle consumer then fetches more often (~4% of
    a CPU at 50 ms in kafka-python, ~1% at 500); a Kafka broker answers as soon as a
    record arrives, so there only idle fetches cost anything."""

    def check(self) -> None:
        """Raise ConfigError for a value out of range, naming its environment variable."""
        if self.spans_encoding not in ENCODINGS:
            raise ConfigError(
                f"{_env('spans_encoding')} must be one of {', '.join(ENCODINGS)}, got "
                f"{self.spans_encoding!r}; use the encoding of the Collector's kafka exporter"
            )
        for name in (
            "partitions",
            "replication_factor",
            "session_timeout_ms",
            "max_poll_records",
            "fetch_max_wait_ms",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_env(name)} must be >= 1, got {getattr(self, name)}")
        for name in ("idle_flush_ms", "clock_interval_ms"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{_env(name)} must be >= 0, got {getattr(self, name)}")
        topics = [self.spans_topic, self.events_topic, self.steps_topic, self.dead_letter_topic]
        if len(set(topics)) != len(topics):
            raise ConfigError(
                "the spans, events, steps and dead-letter topics must be four different "
                f"topics, got {', '.join(topics)}"
            )

    def topic_format(self, topic: str) -> str:
        """The format (:data:`ingest.formats.table.FORMATS`) of a message on ``topic``: a
        span batch in the spans topic's encoding, a session event on any other."""
        return KAFKA_ENCODINGS[self.spans_encoding] if topic == self.spans_topic else "event"

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def _env(name: str) -> str:
    return str(KafkaOptions.__dataclass_fields__[name].metadata["env"])


def ensure_topics(options: KafkaOptions) -> None:
    """Create the worker's topics that do not exist, with ``options.partitions`` each."""
    admin = KafkaAdminClient(bootstrap_servers=options.bootstrap_servers, client_id="trajwatch")
    try:
        existing = set(admin.list_topics())
        wanted = [
            options.spans_topic,
            options.events_topic,
            options.steps_topic,
            options.dead_letter_topic,
        ]
        missing = [
            NewTopic(name, options.partitions, options.replication_factor)
            for name in wanted
            if name not in existing
        ]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another worker was first
                admin.create_topics(missing)
            log.info("created topics %s", ", ".join(t.name for t in missing))
    finally:
        admin.close()


def consumer(options: KafkaOptions, group_id: str) -> KafkaConsumer:
    """A group member that commits offsets itself (never automatically)."""
    return KafkaConsumer(
        bootstrap_servers=options.bootstrap_servers,
        group_id=group_id,
        client_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=options.session_timeout_ms,
        heartbeat_interval_ms=max(100, options.session_timeout_ms // 3),
        max_poll_records=options.max_poll_records,
        fetch_max_wait_ms=options.fetch_max_wait_ms,
    )


CALL_TIMEOUT_MS = 10_000
"""The longest a blocking group call (commit, committed offsets) may wait for the
broker; past it the call raises and the stage resumes from its durable offsets."""

DELIVERY_TIMEOUT_MS = 30_000
"""The longest a produced record may wait for its acknowledgement (retrying all the
while, as a restarting broker needs): past it the send fails, and so does the stage."""

BATCH_BYTES = 512 * 1024
"""The producer's batch size, under the brokers' default ``message.max.bytes`` (1 MB)."""

MAX_RECORD_BYTES = 1_000_000
"""The largest repartition record the ordering stage sends: under the producer's
``max_request_size`` and the brokers' default ``message.max.bytes`` (both 1 MiB), with
room for the key and the batch's headers. A draft larger than that (several fields near
the attribute cap) could never be written and would stall its partition: it becomes a
dead letter instead, with the reason and its source location."""

DEAD_LETTER_HEAD_BYTES = 64 * 1024
"""How much of an oversized record's value its dead letter keeps."""

WAVE_BYTES = BATCH_BYTES // 2
"""The most bytes :meth:`OrderingStage._send` hands the producer between two flushes:
whatever the partitions, each gets at most one batch per wave (see :func:`producer`)."""


def producer(options: KafkaOptions) -> KafkaProducer:
    """The ordering stage's producer, set so that what it writes to a partition is always
    a prefix of what it was given for it, in order — never a later record without an
    earlier one. A session's drafts then reach the sequencing stage in the order they
    were released, even across a failed send: the stage resumes from its committed
    offsets and sends the lost drafts again *before* anything that followed them.

    - One request in flight per connection: a retried batch is not overtaken.
    - Retried until :data:`DELIVERY_TIMEOUT_MS` (a broker restart is survived in place),
      then the batch fails; the stage sends in waves of at most :data:`WAVE_BYTES`, each
      flushed and checked before the next, and a wave is one batch per partition (the
      batch holds twice the wave, and ``linger_ms`` outlasts the filling of a wave, so
      nothing is drained before the flush). A failed batch has no successor in flight
      or queued: the wave stops there, and the producer is discarded.
    - Not idempotent. kafka-python enables idempotence by default, and an idempotent
      producer that loses one batch goes on with the next: after an out-of-order
      sequence it bumps its epoch, fails the batch in flight and produces the queued
      ones — later drafts ahead of the lost ones. Tansu's S3 storage also answers the
      epoch bump with an unknown error, which leaves the producer failing every send
      for good, and advances a producer's sequence before it writes the batch (a
      broker killed in between acknowledges the retry as a duplicate it never stored).
      A retry may write a draft twice instead; the sequencing stage drops the second
      copy by step id."""
    return KafkaProducer(
        bootstrap_servers=options.bootstrap_servers,
        client_id="trajwatch",
        acks="all",
        enable_idempotence=False,
        max_in_flight_requests_per_connection=1,
        batch_size=BATCH_BYTES,
        linger_ms=5_000,  # flushed at the end of each wave, never drained before
        request_timeout_ms=10_000,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
        max_block_ms=CALL_TIMEOUT_MS,
    )


@dataclass(frozen=True, slots=True)
class _Record:
    topic: str
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]] | None = None
    partition: int | None = None
    """None: the producer's partitioner chooses by key."""

    def size(self) -> int:
        """An upper bound of its bytes in a batch (Kafka's per-record overhead < 64)."""
        extra = sum(len(name) + len(value) for name, value in self.headers or ())
        return len(self.key) + len(self.value) + extra + 64


class SoleOwnerError(UserError):
    """A worker storing into SQLite found another member in its group."""


class _Rebalances(ConsumerRebalanceListener):
    """Notes that the group rebalanced; the stage acts on it when ``poll`` returns.

    kafka-python runs these callbacks on its network thread, where no blocking call
    (commit, committed, a store query) may run. Nothing is lost by waiting: the ordering
    stage commits after every batch (a commit still in flight, or refused by the
    rebalance, leaves the offsets a batch behind: that batch is read again and its
    drafts dropped downstream as duplicates), and the sequencing stage's durable offsets are
    the store's."""

    def __init__(self) -> None:
        self.revoked = False
        self.assigned = False

    def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        self.revoked = True

    def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        self.assigned = True

    def take(self) -> bool:
        """Whether the group rebalanced since the last call."""
        happened = self.revoked or self.assigned
        self.revoked = self.assigned = False
        return happened


def _dead_letter(
    topic: str, partition: int, offset: int, reason: str, payload: bytes
) -> DeadLetter:
    return DeadLetter(
        source=SOURCE,
        location=f"kafka:{topic}/{partition}@{offset}",
        reason=reason,
        payload=payload,
    )


def repartition_records(
    topic: str,
    released: list[Resolved],
    relay: ClockRelay | None = None,
    *,
    every_clock: bool = False,
) -> tuple[list[_Record], list[DeadLetter]]:
    """The repartition records of ``released`` drafts (keyed by session id), in order,
    and a dead letter for each draft too large to be one (:data:`MAX_RECORD_BYTES`).

    With a ``relay`` (silence steps on): each record is sent to its partition by number
    (where its key puts it, :func:`lane_of`) and carries its input partition's clock, and
    the batch ends with a record of each clock still owed to a partition, if the relay's
    interval has passed or ``every_clock`` (:mod:`ingest.sources.clock_relay`)."""
    records, dead = [], []
    for item in released:
        key = item.session_id.encode("utf-8", "surrogatepass")
        draft = item.draft
        lane = lane_of(key, relay.lanes) if relay is not None else None
        clock = None
        if relay is not None and lane is not None:
            clock = relay.route(draft.partition, draft.step.ts, lane)
        value = encode_resolved(item, clock=clock)
        if len(key) + len(value) > MAX_RECORD_BYTES:
            dead.append(_oversized(topic, item, len(key) + len(value)))
            if relay is not None:
                relay.passed(draft.partition, draft.step.ts)
                if clock is not None:  # owed still: the record that carried it is not sent
                    relay.passed(draft.partition, clock)
        else:
            records.append(_Record(topic, key, value, partition=lane))
    if relay is not None:
        records += [
            _Record(topic, b"", encode_clock(mark), partition=lane)
            for lane, mark in relay.flush(force=every_clock)
        ]
    return records, dead


def _oversized(topic: str, item: Resolved, size: int) -> DeadLetter:
    draft = item.draft
    return DeadLetter(
        source=SOURCE,
        location=f"kafka:{topic} session {item.session_id} step {draft.step.step_id}",
        reason=(
            f"step of {size:,} bytes encoded is over the {MAX_RECORD_BYTES:,}-byte "
            "repartition record limit (the brokers' default message.max.bytes); "
            "trajwatch serve stores such a step"
        ),
        payload=encode_resolved(item)[:DEAD_LETTER_HEAD_BYTES],
    )


def _max_ts(metadata: str | None) -> int | None:
    try:
        value = json.loads(metadata or "{}").get("max_ts")
    except (ValueError, AttributeError):
        return None  # not ours (another tool committed for this group): order afresh
    return value if isinstance(value, int) else None


def decode_message(
    options: KafkaOptions,
    topic: str,
    partition: int,
    offset: int,
    value: bytes | None,
    *,
    max_attribute_bytes: int,
) -> Decoded:
    """One input message decoded: a span batch (the spans topic, in its encoding) or one
    session event (any other input topic). Never raises: what cannot be read is a dead
    letter located ``kafka:<topic>/<partition>@<offset>``. The ordering stage feeds the
    result to its pipeline as partition ``<topic>/<partition>``."""
    location = f"kafka:{topic}/{partition}@{offset}"
    if not value:
        reason = "empty message: no batch or event in it"
        return Decoded(rejects=[_dead_letter(topic, partition, offset, reason, b"")])
    record = RawRecord(
        options.topic_format(topic), value, location, f"{topic}/{partition}", source=SOURCE
    )
    return decode(record, max_attribute_bytes=max_attribute_bytes)


def split_by_trace(batch: bytes) -> list[tuple[bytes, bytes]]:
    """An ``ExportTraceServiceRequest`` as the Collector's Kafka exporter sends it with
    ``partition_traces_by_id``: one message per trace, keyed by the hex trace id, each
    holding that trace's spans under their resource and scope. ``(key, value)`` pairs in
    the order each trace first appears (for tests, benchmarks and tools that play
    recorded batches into Kafka)."""
    request = ExportTraceServiceRequest.FromString(batch)
    split: dict[bytes, ExportTraceServiceRequest] = {}
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out = split.setdefault(span.trace_id, ExportTraceServiceRequest())
                if not out.resource_spans or out.resource_spans[-1].resource != (
                    resource_spans.resource
                ):
                    added = out.resource_spans.add()
                    added.resource.CopyFrom(resource_spans.resource)
                    added.schema_url = resource_spans.schema_url
                target = out.resource_spans[-1]
                if not target.scope_spans or target.scope_spans[-1].scope != scope_spans.scope:
                    scope = target.scope_spans.add()
                    scope.scope.CopyFrom(scope_spans.scope)
                    scope.schema_url = scope_spans.schema_url
                target.scope_spans[-1].spans.add().CopyFrom(span)
    return [(trace.hex().encode(), out.SerializeToString()) for trace, out in split.items()]


class OrderingStage:
    """Stage 1: input topics → decoded, ordered, resolved drafts on the repartition topic.

    Holds what the pipeline holds for ordering (a lateness window per input partition,
    the trace index); nothing of it is durable, by design: its input offsets are
    committed behind the earliest draft still held, so a restart rebuilds it by
    re-reading."""

    def __init__(
        self,
        options: KafkaOptions,
        new_pipeline: Callable[[], Pipeline],
        new_producer: Callable[[], KafkaProducer],
        store: Store,
    ) -> None:
        self.options = options
        self._new_pipeline = new_pipeline
        self._new_producer = new_producer
        self._producer: KafkaProducer | None = None
        self._store = store
        self.pipeline = new_pipeline()
        self.consumer = consumer(options, options.group_id)
        self._relay: ClockRelay | None = None
        """Each input partition's clock for the repartition partitions, when silence
        steps are on (:mod:`ingest.sources.clock_relay`); made at the first send."""
        self._read: dict[TopicPartition, int] = {}
        self._last_input: dict[TopicPartition, float] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._rewind = False
        self.produced = 0
        self._rebalances = _Rebalances()
        self.consumer.subscribe(
            [options.spans_topic, options.events_topic], listener=self._rebalances
        )

    def poll(self, timeout_ms: int) -> int:
        """Read, decode, order and send one batch; returns the messages read."""
        if self._rewind:
            self._seek_committed()
        batch = self.consumer.poll(timeout_ms=timeout_ms)
        if self._rebalances.take():
            # partitions moved: forget what is held (the next owner of each re-reads from
            # its committed offset) and start again from the committed offsets
            owned = len(self.consumer.assignment())
            log.info("ordering stage: now owns %d input partitions", owned)
            self.reset()
            return 0
        now = time.monotonic()
        read = 0
        for tp, messages in batch.items():
            partition = f"{tp.topic}/{tp.partition}"
            for message in messages:
                self._feed(tp, message.offset, message.value, partition)
            self._read[tp] = messages[-1].offset + 1
            self._last_input[tp] = now
            read += len(messages)
        idle = self.options.idle_flush_ms / 1000
        for tp, last in self._last_input.items():
            partition = f"{tp.topic}/{tp.partition}"
            # silent *and* read to its end: a partition merely not fetched for a while
            # (others' data came first) is not idle, and flushing it would change the order
            caught_up = self._read[tp] >= (self.consumer.highwater(tp) or 0)
            if now - last >= idle and caught_up and self.pipeline.held_from(partition) is not None:
                log.debug("ordering stage: %s idle, released what it held", partition)
                self.pipeline.end_partition(partition)
        self._send()
        return read

    def _feed(self, tp: TopicPartition, offset: int, value: bytes | None, partition: str) -> None:
        decoded = decode_message(
            self.options,
            tp.topic,
            tp.partition,
            offset,
            value,
            max_attribute_bytes=self.pipeline.settings.max_attribute_bytes,
        )
        self.pipeline.feed_decoded(decoded, partition=partition, position=offset)

    def _send(self, *, wait: bool = False) -> None:
        """Produce what is released, store and send the dead letters, then commit each
        input partition behind what it still holds, unless the relay still owes a lane
        its clock: without ``wait``, the commit is sent and not waited for (a round trip
        before the next poll saved; see :meth:`_commit_done`); with it (closing), every
        clock owed is sent first."""
        released = self.pipeline.resolve()
        dead = self.pipeline.take_dead_letters()
        relay = self._clock_relay()
        records, oversized = repartition_records(
            self.options.steps_topic, released, relay, every_clock=wait
        )
        dead += oversized
        records += [
            _Record(
                self.options.dead_letter_topic,
                letter.dead_letter_id.encode(),
                letter.payload,
                [
                    ("reason", letter.reason.encode("utf-8", "replace")),
                    ("location", letter.location.encode("utf-8", "replace")),
                    ("source", letter.source.encode()),
                ],
            )
            for letter in dead
        ]
        self._produce(records)
        if dead:
            with self._store.unit() as unit:
                unit.add_dead_letters(dead)
        self.produced += len(released)
        offsets = {}
        for tp, read in self._read.items():
            partition = f"{tp.topic}/{tp.partition}"
            if relay is not None and relay.owes(partition):
                # a time held back dies with this process: until the lanes are told, a
                # restart must read again (and relay again) the drafts that moved it
                continue
            held = self.pipeline.held_from(partition)
            position = read if held is None else held
            if self._committed.get(tp) != position:
                # with the watermark: re-reading from ``position`` then rebuilds exactly the
                # ordering state this process had (see _seek_committed)
                mark = self.pipeline.newest_event_time(partition)
                metadata = json.dumps({"max_ts": mark}) if mark is not None else ""
                offsets[tp] = OffsetAndMetadata(position, metadata, -1)
        if offsets:
            if wait:
                self.consumer.commit(offsets, timeout_ms=CALL_TIMEOUT_MS)
            else:
                self.consumer.commit_async(offsets, callback=self._commit_done)
            self._committed.update({tp: o.offset for tp, o in offsets.items()})

    def _clock_relay(self) -> ClockRelay | None:
        """The relay of input clocks (None: silence steps off), made once the number of
        repartition partitions is known: asked of the producer, which waits at most
        :data:`CALL_TIMEOUT_MS` for the metadata (the consumer's call waits without
        end) and raises, after which the stage resumes from its committed offsets."""
        if self.pipeline.settings.silence_first_ms <= 0:
            return None
        if self._relay is None:
            if self._producer is None:
                self._producer = self._new_producer()
            lanes = self._producer.partitions_for(self.options.steps_topic)
            if not lanes:
                raise KafkaError(f"no partitions known for topic {self.options.steps_topic}")
            self._relay = ClockRelay(len(lanes), every_s=self.options.clock_interval_ms / 1000)
        return self._relay

    def _commit_done(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], result: Any
    ) -> None:
        """An offset commit sent by :meth:`_send` finished (kafka-python calls this from
        the stage's own ``poll``). It was sent after every draft below the offsets was
        acknowledged, so losing it only leaves the committed offsets behind: a restart
        re-reads more (each commit is an offset with the watermark it was taken at, so
        the ordering state is rebuilt exactly from either) and the sequencing stage drops
        what is produced twice. A failed one is forgotten, so the next batch commits the
        partition again."""
        if isinstance(result, Exception):
            log.debug("ordering stage: offset commit failed, sent again next batch: %s", result)
            for tp, sent in offsets.items():
                if self._committed.get(tp) == sent.offset:
                    del self._committed[tp]

    def _produce(self, records: list[_Record]) -> None:
        """Send ``records`` in waves of at most :data:`WAVE_BYTES` (a record larger than
        that alone), each acknowledged whole before the next is handed over; raises the
        first failure, after which nothing more of them is written (see :func:`producer`)."""
        wave: list[_Record] = []
        size = 0
        for record in records:
            if wave and size + record.size() > WAVE_BYTES:
                self._send_wave(wave)
                wave, size = [], 0
            wave.append(record)
            size += record.size()
        if wave:
            self._send_wave(wave)

    def _send_wave(self, wave: list[_Record]) -> None:
        if self._producer is None:
            self._producer = self._new_producer()
        producer = self._producer
        try:
            try:
                futures = [
                    producer.send(
                        r.topic, key=r.key, value=r.value, headers=r.headers, partition=r.partition
                    )
                    for r in wave
                ]
            except ValueError as exc:  # a partition its metadata does not know (yet)
                raise KafkaError(f"producer refused a record: {exc}") from exc
            producer.flush()  # returns within DELIVERY_TIMEOUT_MS: each batch then failed
            for future in futures:
                future.get(timeout=0)  # raises the send's error, if it failed
        except BaseException:
            # fail-stop: a fresh producer for what follows (the stage re-reads from its
            # committed offsets and sends the failed drafts again, ahead of the rest)
            self._producer = None
            _discard(producer)
            raise

    def reset(self, *, seek: bool = True) -> None:
        """Forget everything held (after a failure, or a rebalance) and, with ``seek``,
        go back to the committed offsets before the next read: the input is read again
        from there."""
        self.pipeline = self._new_pipeline()
        if self._relay is not None:
            self._relay = ClockRelay(self._relay.lanes, every_s=self._relay.every_s)
        self._read.clear()
        self._last_input.clear()
        self._committed.clear()
        self._rewind = seek

    def _seek_committed(self) -> None:
        self._rewind = True  # until every partition is back (a failure here retries)
        for tp in self.consumer.assignment():
            committed = self.consumer.committed(tp, metadata=True, timeout_ms=CALL_TIMEOUT_MS)
            if committed is None:
                self.consumer.seek_to_beginning(tp)
                continue
            self.consumer.seek(tp, committed.offset)
            self._committed[tp] = committed.offset
            # The newest event time seen when the offset was committed: drafts re-read
            # that were released before are released again at once (and dropped as
            # duplicates downstream), the ones that were held are held again, and what
            # follows is ordered exactly as if this stage had never stopped.
            mark = _max_ts(committed.metadata)
            if mark is not None:
                self.pipeline.resume_partition(f"{tp.topic}/{tp.partition}", newest_event_time=mark)
        self._rewind = False

    def close(self) -> None:
        """Send what is released and commit behind what is held, then leave the group.
        What is held is not flushed: the partitions' next owner re-reads it and orders it
        exactly as this process would have (a flush would release it early)."""
        try:
            self._send(wait=True)
        finally:
            self.consumer.close(autocommit=False)
            if self._producer is not None:
                self._producer.close()
                self._producer = None


def _discard(producer: KafkaProducer) -> None:
    """Close a producer whose wave failed. After a failed flush it holds nothing; after
    a failed ``send`` it holds the wave's records before that one, which go out first
    (in order, right behind everything acknowledged: still a prefix), within
    :data:`DELIVERY_TIMEOUT_MS`, before the stage makes a new producer."""
    with contextlib.suppress(KafkaError):
        producer.close(timeout=DELIVERY_TIMEOUT_MS / 1000)


class SequencingStage:
    """Stage 2: the repartition topic → sequenced, judged, stored sessions.

    One batch (one poll) is one store transaction with its offsets; the in-memory
    sessions are a cache of what the store holds, dropped on every rebalance and after
    any failure."""

    def __init__(
        self,
        options: KafkaOptions,
        new_pipeline: Callable[[], Pipeline],
        store: Store,
        *,
        sole_owner: bool = False,
    ) -> None:
        self.options = options
        self.source = f"kafka:{options.steps_topic}"
        self._new_pipeline = new_pipeline
        self._store = store
        self._sole_owner = sole_owner
        self._assignments = 0
        self.pipeline = new_pipeline()
        self.consumer = consumer(options, f"{options.group_id}.sessions")
        self._stored: dict[TopicPartition, int | None] = {}
        self._rewind = False
        self.alerts = 0
        self._rebalances = _Rebalances()
        self.consumer.subscribe([options.steps_topic], listener=self._rebalances)

    def poll(self, timeout_ms: int) -> int:
        """Consume one batch into one store transaction; returns the records read."""
        if self._rewind:
            self._seek_stored()
        batch = self.consumer.poll(timeout_ms=timeout_ms)
        if self._rebalances.take():
            # sessions may have moved: drop the live ones (the store has them) and go
            # back to the stored offsets of whatever this worker owns now
            log.info("sequencing stage: now owns %d partitions", len(self.consumer.assignment()))
            self._check_sole_owner()
            self.reset()
            return 0
        if not batch:
            return 0
        read = 0
        ends: dict[TopicPartition, int] = {}
        for tp, messages in batch.items():
            for message in messages:
                self._feed(tp, message.offset, message.value)
            end = messages[-1].offset + 1
            self.pipeline.move_offset(self.source, str(tp.partition), self._stored.get(tp), end)
            ends[tp] = end
            read += len(messages)
        self.alerts += len(self.pipeline.commit())
        self._stored.update(ends)
        # Not waited for: the store's offsets are the truth (every assignment seeks to
        # them), Kafka's only show the lag. A blocking commit cost every batch a broker
        # round trip before the next poll (5-9 ms median, 16-22 ms p90 on a loaded
        # 2-CPU machine: benchmarks/bench_kafka.py's probe).
        self.consumer.commit_async(
            {tp: OffsetAndMetadata(end, "", -1) for tp, end in ends.items()},
            callback=_lag_commit_done,
        )
        return read

    def _feed(self, tp: TopicPartition, offset: int, value: bytes | None) -> None:
        try:
            mark, item = decode_record(value or b"")
        except RecordError as exc:
            letter = _dead_letter(tp.topic, tp.partition, offset, str(exc), value or b"")
            self.pipeline.feed_decoded(Decoded(rejects=[letter]), partition=self.source)
            return
        lane = self._lane(tp)
        if mark is not None:
            self.pipeline.feed_clock(lane, mark.partition, mark.ts)
        if item is not None:
            self.pipeline.feed_resolved([item], lane=lane)

    def _lane(self, tp: TopicPartition) -> str:
        """The repartition partition as the pipeline's silence watch names it."""
        return f"{self.source}/{tp.partition}"

    def _check_sole_owner(self) -> None:
        """With SQLite, a worker's first (non-empty) assignment must be every partition."""
        owned = self.consumer.assignment()
        if not self._sole_owner or not owned:
            return
        self._assignments += 1
        if self._assignments > 1:
            return
        total = self.consumer.partitions_for_topic(self.options.steps_topic) or set()
        if len(owned) < len(total):
            raise SoleOwnerError(
                f"another worker is in consumer group {self.options.group_id}.sessions and "
                "this one stores into SQLite; more than one worker needs PostgreSQL: give "
                "every worker --db postgresql+psycopg://..."
            )

    def reset(self, *, seek: bool = True) -> None:
        """Drop the in-memory sessions (the store has them) and, with ``seek``, go back
        to the stored offsets before the next read."""
        self.pipeline = self._new_pipeline()
        self._stored.clear()
        self._rewind = seek

    def _seek_stored(self) -> None:
        self._rewind = True  # until every partition is back (a failure here retries)
        for tp in self.consumer.assignment():
            position = self._store.get_offset(self.source, str(tp.partition))
            self._stored[tp] = position
            if position is None:
                self.consumer.seek_to_beginning(tp)
            else:
                self.consumer.seek(tp, position)
            # the sessions the lane's last owner watched for silence, as of that position
            lane = self._lane(tp)
            self.pipeline.watch(lane, self._store.silence_watch(lane))
        self._rewind = False

    def close(self) -> None:
        self.consumer.close(autocommit=False)


def _lag_commit_done(offsets: Mapping[TopicPartition, OffsetAndMetadata], result: Any) -> None:
    """A sequencing stage's Kafka commit finished; a failed one only leaves the lag
    shown higher until the next batch's commit."""
    if isinstance(result, Exception):
        log.debug("sequencing stage: Kafka commit (lag only) failed: %s", result)


def options_from(
    table: Mapping[str, Any], environ: Mapping[str, str], overrides: Mapping[str, Any]
) -> KafkaOptions:
    """Defaults, then the config's ``[kafka]`` table, then the environment, then
    ``overrides`` (flags); raises ConfigError for an unknown key or a bad value."""
    known = KafkaOptions.keys()
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"unknown key `{key}` in [kafka]; known: {', '.join(known)}")
        default = KafkaOptions.__dataclass_fields__[key].default
        if type(value) is not type(default):
            raise ConfigError(
                f"[kafka] {key} must be {'an integer' if isinstance(default, int) else 'text'},"
                f" got {value!r}"
            )
        values[key] = value
    for name in known:
        raw = environ.get(_env(name), "")
        if raw:
            default = KafkaOptions.__dataclass_fields__[name].default
            if isinstance(default, int):
                try:
                    values[name] = int(raw)
                except ValueError as exc:
                    raise ConfigError(f"{_env(name)}={raw!r} is not an integer") from exc
            else:
                values[name] = raw
    values.update({k: v for k, v in overrides.items() if v is not None})
    options = KafkaOptions(**values)
    options.check()
    return options
