"""Whole-pipeline properties over mutated REAL input: decode → steps → detectors → store.

The inputs are records of the committed recordings (OTLP protobuf and JSON batches,
session events from ``fixtures/recorded``; an OTLP/JSON export from
``../shared/corpus/recordings``), mutated as bytes (flip, insert, delete, truncate,
splice) or as JSON values (any value, at any path, replaced by a hostile one). The
mutation primitives and seed loader are ``tests/support/fuzz.py``'s, which
``benchmarks/bench_fuzz.py`` runs for as long as one wants; here each test keeps its
example count modest.

What must hold for every input:

- **No exception** escapes ``Pipeline.feed_*`` or ``close``.
- **Nothing vanishes.** A session event decodes to drafts or to one dead letter, never
  neither and never both. Every draft the decoders produce ends as exactly one of: a step
  placed in its session, a duplicate of a step already stored or placed, or a dead letter
  (a value fits no column); every placed step is stored (the store refuses none: the
  pipeline checks first), and the store holds exactly the steps and the dead letters the
  pipeline reports.
- **The store stays consistent.** Replaying the same input again stores nothing new;
  each session's seqs are 0..n-1 and its cursor's ``next_seq`` is n; every tool result's
  and egress's parent is a stored step or null; every stored value reads back with the
  type of its field, and text is valid Unicode without NUL.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from detectors.base import Detector
from detectors.registry import DetectorSet
from ingest.formats.session_events import decode_event
from ingest.pipeline.engine import Pipeline
from models.records import Alert, DeadLetter, Step, StepKind
from models.storable import Unstorable, clean_text, storable_step
from models.store import Store
from models.tables import Base
from tests.conftest import PG_URL
from tests.support.fuzz import (
    FILE,
    HOSTILE,
    Seed,
    dump_json,
    load_seeds,
    mutate_bytes,
    paths_of,
    replace_at,
    run_input,
)
from tests.support.paths import CORPUS, ROOT
from tests.unit.ingest.test_bad_input import batch, json_values
from trajwatch.config import detector_set

SEED_FILES = (
    ROOT / "fixtures/recorded/run-002-8e3cb0.otlp.binpb",
    ROOT / "fixtures/recorded/run-008-7aaac6.otlp.binpb",
    ROOT / "fixtures/recorded/run-004-8b715b.events.jsonl",
    ROOT / "fixtures/recorded/run-031-e3d26d.otlp.jsonl",
    CORPUS / "recordings/otlp/agentevals-dev__agentevals__adk_py_v1_default_S2.json.xz",
    *sorted((CORPUS / "recordings").glob("c*/*.jsonl.xz")),  # transcripts
)
DETECTORS = detector_set({})
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _seeds(kind: str) -> list[Seed]:
    found = [seed for seed in _all_seeds() if seed.kind == kind]
    assert found, f"no {kind} seed among {SEED_FILES}"
    return found


_CACHE: list[Seed] = []


def _all_seeds() -> list[Seed]:
    if not _CACHE:
        _CACHE.extend(load_seeds(tuple(p for p in SEED_FILES if p.exists())))
    return _CACHE


# -- strategies ------------------------------------------------------------------------

HUGE = "lorem ipsum dolor " * 12_000
"""A huge value made of words: the fuzzer's 200,000 ``x`` in a tool call's arguments
takes ``detectors/intent_drift``'s ``_CALL_RE`` minutes (its search is quadratic in a run
of word characters; reported, the detector is not this module's), which a test suite
cannot afford; ``benchmarks/bench_fuzz.py`` keeps it and reports it."""
hostile = (
    st.sampled_from([v for v in HOSTILE if not (isinstance(v, str) and len(v) > 10_000)])
    | st.just(HUGE)
    | json_values
    | st.floats()
    | st.integers()
)
"""What a mutation puts in place of a value: the fuzzer's hostile values, plus any JSON
(``json_values`` of test_bad_input), any float (NaN, ±inf, -0.0) and any integer."""


@st.composite
def byte_mutated(draw: st.DrawFn, kind: str) -> tuple[str, list[bytes]]:
    """A run of consecutive records of a ``kind`` seed, with byte mutations."""
    seed = draw(st.sampled_from(_seeds(kind)))
    start = draw(st.integers(0, len(seed.records) - 1))
    records = list(seed.records[start : start + draw(st.integers(1, 4))])
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 3))):
        at = rng.randrange(len(records))
        partner = rng.choice(rng.choice(_all_seeds()).records)
        records[at] = mutate_bytes(rng, records[at], partner)
    return kind, records


@st.composite
def value_mutated(draw: st.DrawFn, kind: str) -> tuple[str, list[bytes]]:
    """A run of consecutive JSON records of a ``kind`` seed, one value (at any path) of
    one or two of them replaced by a hostile value."""
    import json

    seed = draw(st.sampled_from(_seeds(kind)))
    start = draw(st.integers(0, len(seed.records) - 1))
    records = list(seed.records[start : start + draw(st.integers(1, 4))])
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, len(records) - 1))
        doc = json.loads(records[at])
        paths = paths_of(doc)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        records[at] = dump_json(replace_at(doc, path, draw(hostile)))
    return kind, records


# -- running and checking ---------------------------------------------------------------


def _clear(store: Store) -> None:
    """Every table of the schema emptied, rows that refer to others first (a new table
    with a foreign key needs no change here)."""
    with store.engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())


def _run(store: Store, kind: str, records: list[bytes]) -> Pipeline:
    """Feed ``records`` to a fresh pipeline and close it (no exception may escape), as
    the fuzzer does: records of a kind through its feed, a transcript's lines as a file."""
    return run_input(store, kind, records, DETECTORS)


def _counts(store: Store) -> dict[str, int]:
    return {table: store.count(table) for table in ("steps", "alerts", "dead_letters")}


def _check_accounted(store: Store, kind: str, records: list[bytes], pipeline: Pipeline) -> None:
    stats = pipeline.stats
    if kind == "event":
        for data in records:
            drafts, dead = decode_event(data, source="prop", location="x")
            assert bool(drafts) != (dead is not None), "an event is drafts xor a dead letter"
    ended = stats.drafts_stepped + stats.drafts_duplicate + stats.drafts_unstorable
    assert stats.drafts == ended + stats.drafts_nested
    assert stats.store_rejected == 0, "the pipeline let through a step the store refused"
    counts = _counts(store)
    assert counts["steps"] == stats.new_steps == stats.steps
    assert counts["dead_letters"] == stats.dead_letters
    assert counts["alerts"] == stats.new_alerts


def _check_consistent(store: Store) -> None:
    sessions = {info.session_id for info in store.sessions()}
    for session_id in sessions:
        steps = store.steps(session_id)
        assert [step.seq for step in steps] == list(range(len(steps)))
        cursor = store.session_cursor(session_id)
        assert cursor is not None and cursor.next_seq == len(steps)
        for step in steps:
            _check_types(step)
    with store.engine.connect() as connection:
        dangling = connection.execute(
            text(
                "SELECT count(*) FROM steps s WHERE s.kind IN ('tool_result', 'egress') "
                "AND s.parent_step_id IS NOT NULL AND NOT EXISTS "
                "(SELECT 1 FROM steps p WHERE p.step_id = s.parent_step_id)"
            )
        ).scalar_one()
    assert dangling == 0, "a tool result or egress points at a step that does not exist"
    for alert in store.alerts():
        assert math.isfinite(alert.score)
    for letter in store.dead_letters(limit=10_000):
        assert isinstance(letter.payload, bytes) and letter.reason
        assert clean_text(letter.reason) == letter.reason


def _check_types(step: Step) -> None:
    assert storable_step(step) is step, "a stored step reads back as one needing repair"
    assert isinstance(step.kind, StepKind)
    for name in ("ts", "seq", "model_session"):
        assert type(getattr(step, name)) is int
    for name in ("tokens_in", "tokens_out", "http_status", "end_ts"):
        assert getattr(step, name) is None or type(getattr(step, name)) is int
    assert step.cost is None or math.isfinite(step.cost)
    assert isinstance(step.detail, dict)


def _check_properties(store: Store, kind: str, records: list[bytes]) -> None:
    _clear(store)
    first = _run(store, kind, records)
    _check_accounted(store, kind, records, first)
    before = _counts(store)
    again = _run(store, kind, records)
    assert again.stats.new_steps == 0 and again.stats.new_alerts == 0
    assert _counts(store) == before, "a replay of the same input stored something new"
    _check_consistent(store)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    store = Store.open(f"sqlite:///{tmp_path / 'props.db'}")
    yield store  # type: ignore[misc]
    store.close()


@settings(max_examples=40, **SETTINGS)
@given(byte_mutated("otlp_proto"))
def test_byte_mutated_protobuf_batches(sqlite_store: Store, case: tuple[str, list[bytes]]) -> None:
    _check_properties(sqlite_store, *case)


@settings(max_examples=40, **SETTINGS)
@given(byte_mutated("otlp_json") | byte_mutated("event"))
def test_byte_mutated_json_records(sqlite_store: Store, case: tuple[str, list[bytes]]) -> None:
    _check_properties(sqlite_store, *case)


@settings(max_examples=60, **SETTINGS)
@given(value_mutated("event") | value_mutated("otlp_json"))
def test_value_mutated_json_records(sqlite_store: Store, case: tuple[str, list[bytes]]) -> None:
    _check_properties(sqlite_store, *case)


@st.composite
def transcript_mutated(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    """Up to 30 consecutive lines of a real Claude Code transcript or Codex rollout, one
    or two of them mutated (a value replaced by a hostile one, or bytes), read back as a
    file of the recording's name."""
    seeds = [seed for seed in _all_seeds() if seed.kind.startswith(FILE)]
    seed = draw(st.sampled_from(seeds))
    start = draw(st.integers(0, len(seed.records) - 1))
    records = list(seed.records[start : start + draw(st.integers(1, 30))])
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, len(records) - 1))
        if draw(st.booleans()) and (doc := _json_or_none(records[at])) is not None:
            # (a line the first round byte-mutated is no JSON any more: mutate its bytes)
            paths = paths_of(doc)
            path = paths[draw(st.integers(0, len(paths) - 1))]
            records[at] = dump_json(replace_at(doc, path, draw(hostile)))
        else:
            records[at] = mutate_bytes(rng, records[at], rng.choice(seed.records))
    return seed.kind, records


def _json_or_none(record: bytes) -> object:
    import json

    try:
        return json.loads(record)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        return None


@pytest.mark.skipif(
    not any(p.name.endswith(".jsonl.xz") for p in SEED_FILES), reason="needs ../shared/corpus"
)
@settings(max_examples=30, **SETTINGS)
@given(transcript_mutated())
def test_mutated_transcripts(sqlite_store: Store, case: tuple[str, list[bytes]]) -> None:
    _check_properties(sqlite_store, *case)


@pytest.fixture
def pg_store(db_url: str) -> Store:
    store = Store.open(db_url)
    yield store  # type: ignore[misc]
    store.close()


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"])
@settings(max_examples=15, **SETTINGS)
@given(
    value_mutated("event")
    | value_mutated("otlp_json")
    | byte_mutated("otlp_proto")
    | byte_mutated("event")
)
def test_mutated_records_on_postgresql(pg_store: Store, case: tuple[str, list[bytes]]) -> None:
    assert PG_URL.split("/")[-1] in pg_store.url
    _check_properties(pg_store, *case)


# -- the storable rules, one by one, on both databases ----------------------------------


def _event(seq: int, **fields: object) -> dict[str, object]:
    base = {"type": "tool_call", "session_id": "s", "seq": seq, "ts": 1_767_000_000 + seq}
    return {**base, "tool": "bash", "call_id": f"c{seq}", **fields}


def test_lone_surrogates_and_nul_are_repaired_and_stored(store: Store) -> None:
    pipeline = Pipeline(store)
    pipeline.feed_event(
        dump_json(_event(0, tool="ba\udcffsh", arguments={"cmd": "cut \ud83d", "z": "a\x00b"})),
        source="t",
        location="l:1",
        partition="p",
    )
    pipeline.close()
    (step,) = store.steps("s")
    assert step.tool == "ba\ufffdsh"
    arguments = step.arguments or ""
    assert "cut \ufffd" in arguments  # the half pair cut off by the producer
    assert "a\\u0000b" in arguments and "\x00" not in arguments  # JSON text escapes a NUL
    assert store.count("dead_letters") == 0


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("ts", 2**63, "ts: "),  # Unix seconds whose nanoseconds overflow int64
    ],
)
def test_a_value_beyond_its_column_costs_that_record_only(
    store: Store, field: str, value: object, reason: str
) -> None:
    pipeline = Pipeline(store)
    for seq in range(3):
        event = _event(seq, **({field: value} if seq == 1 else {}))
        pipeline.feed_event(dump_json(event), source="t", location=f"l:{seq}", partition="p")
    pipeline.close()
    assert [step.call_id for step in store.steps("s")] == ["c0", "c2"]
    assert [s.seq for s in store.steps("s")] == [0, 1]
    (dead,) = store.dead_letters()
    assert dead.reason.startswith("unstorable step: " + reason), dead.reason
    assert b"c1" in dead.payload


def test_nan_and_infinite_event_times_are_dead_letters(store: Store) -> None:
    pipeline = Pipeline(store)
    for seq, ts in enumerate(("NaN", "Infinity", "-Infinity")):
        data = dump_json(_event(seq)).replace(
            f'"ts": {1_767_000_000 + seq}'.encode(), b'"ts": ' + ts.encode()
        )
        pipeline.feed_event(data, source="t", location=f"l:{seq}", partition="p")
    pipeline.close()
    reasons = sorted(letter.reason for letter in store.dead_letters())
    assert len(reasons) == 3 and all(r.startswith(("ts: ", "tool_call.ts: ")) for r in reasons)
    assert sum("is not a finite number" in r for r in reasons) == 2  # -inf: below the minimum


def test_an_event_time_too_far_for_nanoseconds_is_a_dead_letter(store: Store) -> None:
    pipeline = Pipeline(store)
    pipeline.feed_event(dump_json(_event(0, ts=1e300)), source="t", location="l", partition="p")
    pipeline.close()
    (dead,) = store.dead_letters()
    assert dead.reason == "ts: 1e+300 seconds is beyond any representable time"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"tokens_in": 2**31}, "tokens_in: 2147483648 is outside the column's range (32-bit"),
        ({"http_status": -(2**64)}, "http_status: "),
        ({"cost": math.nan}, "cost: nan is not a finite number"),
        ({"tool": "t" * 513}, "tool: 513 characters, the column holds at most 512"),
        ({"tokens_out": "12"}, "tokens_out: '12' is not an integer"),
        ({"detail": {"budget": {"usd": math.inf}}}, "detail.budget.usd: inf is not a finite"),
        ({"detail": {"k": object()}}, "detail.k: a object is not JSON"),
        ({"ts": None}, "ts: missing"),
    ],
)
def test_storable_step_rejects_what_no_column_holds(changes: dict, reason: str) -> None:
    step = Step(step_id="s#0", session_id="s", kind=StepKind.MODEL_CALL, ts=0)
    with pytest.raises(Unstorable) as caught:
        storable_step(step.with_(**changes))
    assert caught.value.reason.startswith(reason), caught.value.reason


def test_the_store_isolates_a_refused_row_and_keeps_the_rest(store: Store) -> None:
    """The database's own refusal (here a unique constraint the pipeline cannot see
    coming) costs that row: the rest of the batch is stored in the same transaction."""
    steps = [
        Step(step_id=f"s#{i}", session_id="s", kind=StepKind.TOOL_CALL, ts=i, seq=i)
        for i in range(3)
    ]
    clash = steps[1].with_(step_id="s#other")  # same (session, seq) as s#1
    with store.unit() as unit:
        inserted, refused = unit.add_steps_or_reject([*steps, clash])
    assert inserted == 3
    assert [(step.step_id, reason.split(":")[0]) for step, reason in refused] == [
        ("s#other", "the database refused the step")
    ]
    assert [step.step_id for step in store.steps("s")] == ["s#0", "s#1", "s#2"]


def test_unstorable_alert_and_dead_letter_text(store: Store) -> None:
    alert = Alert(
        alert_id="al_1",
        session_id="s",
        detector="d",
        severity="warn",  # type: ignore[arg-type]
        score=math.nan,
        onset_seq=0,
        onset_step_id="s#0",
        evidence=(),
        reason="r",
    )
    letter = DeadLetter(source="t\x00", location="l\ud800", reason="why", payload=b"\x00")
    with store.unit() as unit:
        fresh, refused = unit.add_alerts_or_reject([alert])
        assert unit.add_dead_letters([letter]) == 1
    assert fresh == [] and refused[0][1] == "score: nan is not a finite number"
    (stored,) = store.dead_letters()
    assert (stored.source, stored.location, stored.payload) == ("t\ufffd", "l\ufffd", b"\x00")


def test_an_infrastructure_failure_still_propagates(tmp_path: Path) -> None:
    """Only data problems are isolated: a broken database fails the commit, and the input
    (its offsets uncommitted) will be read again."""
    store = Store.open(f"sqlite:///{tmp_path / 'broken.db'}")
    try:
        with store.engine.begin() as connection:
            connection.execute(text("DROP TABLE deliveries"))
            connection.execute(text("DROP TABLE alerts"))
            connection.execute(text("DROP TABLE steps"))
        pipeline = Pipeline(store)
        pipeline.feed_event(dump_json(_event(0)), source="t", location="l", partition="p")
        with pytest.raises(Exception, match="no such table"):
            pipeline.close()
    finally:
        store.close()


def test_a_protobuf_time_beyond_int64_costs_that_span_only(store: Store) -> None:
    """OTLP times are fixed64: 2**64 - 1 decodes, and no BigInteger column holds it."""
    request = batch(3)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[1].start_time_unix_nano = spans[1].end_time_unix_nano = 2**64 - 1
    pipeline = Pipeline(store)
    pipeline.feed_otlp_proto(request.SerializeToString(), source="t", location="l", partition="p")
    pipeline.close()
    # a tool span is two drafts, its call and its result
    assert pipeline.stats.drafts_stepped == 4 and pipeline.stats.drafts_unstorable == 2
    letters = store.dead_letters()
    assert len(letters) == 2
    assert all(
        d.reason.startswith("unstorable step: ts: 18446744073709551615 is outside") for d in letters
    )
    assert store.count("steps") == 4


def test_session_facts_no_column_holds_are_a_dead_letter_and_the_steps_stay(
    store: Store,
) -> None:
    """A session's facts come from its start's detail (JSON, any length); the session row
    holds a policy id of at most 512 characters. The cursor is written, the facts kept in
    a dead letter."""
    pipeline = Pipeline(store)
    start = {
        "type": "session_start",
        "session_id": "s",
        "seq": 0,
        "ts": 1_767_000_000,
        "goal": "do it",
        "policy_id": "p" * 600,
    }
    pipeline.feed_event(dump_json(start), source="t", location="l:0", partition="p")
    pipeline.feed_event(dump_json(_event(1)), source="t", location="l:1", partition="p")
    pipeline.close()
    assert [step.kind for step in store.steps("s")] == [StepKind.START, StepKind.TOOL_CALL]
    cursor = store.session_cursor("s")
    assert cursor is not None and cursor.next_seq == 2
    (dead,) = store.dead_letters()
    assert dead.reason.startswith("unstorable sessioninfo: policy_id: 600 characters")


class _Brittle(Detector):
    """A detector with a bug: it cannot take a tool named ``boom``."""

    name = "brittle"

    def _reset(self) -> None:
        pass

    def update(self, step: Step) -> list[Alert]:
        if step.tool == "boom":
            raise ZeroDivisionError("division by zero")
        return []


def test_a_detector_exception_costs_no_step(store: Store) -> None:
    pipeline = Pipeline(store, detectors=DetectorSet([_Brittle()]))
    for seq, tool in enumerate(("bash", "boom", "bash")):
        event = dump_json(_event(seq, tool=tool))
        pipeline.feed_event(event, source="t", location=f"l:{seq}", partition="p")
    pipeline.close()
    assert [step.tool for step in store.steps("s")] == ["bash", "boom", "bash"]
    (dead,) = store.dead_letters()
    assert dead.reason == "detector brittle failed: ZeroDivisionError: division by zero"
    assert dead.location == "s#1"


def test_a_session_id_with_nul_from_a_span_attribute_is_repaired(store: Store) -> None:
    """The fuzzer's find: the trace index learns the session from the raw attribute, so
    the session row and its cursor named two different sessions (ValueError)."""
    request = batch(2)
    attr = request.resource_spans[0].scope_spans[0].spans[0].attributes.add()
    attr.key, attr.value.string_value = "gen_ai.conversation.id", "sess\x00\x00x"
    # the second span's drafts have no session of their own: the trace index gives it
    pipeline = Pipeline(store)
    pipeline.feed_otlp_proto(request.SerializeToString(), source="t", location="l", partition="p")
    pipeline.close()
    repaired = "sess\ufffd0000\ufffd0000x"  # an id's mark names what it replaced
    assert [info.session_id for info in store.sessions()] == [repaired]
    assert len(store.steps(repaired)) == 4


def test_ids_that_differ_only_in_bad_characters_stay_distinct(store: Store) -> None:
    """The fuzzer's find: every id made of a lone surrogate became U+FFFD, so hostile ids
    from unrelated inputs piled into one session. Each keeps its own session, and its
    steps' ids, parents and call ids agree with it."""
    pipeline = Pipeline(store)
    for n, session in enumerate(("\ud800", "\udfff", "a\ud83d", "a\x00")):
        call = _event(0, session_id=session, call_id="c\udc01")
        result = {**_event(1, session_id=session, call_id="c\udc01"), "type": "tool_result"}
        for seq, event in enumerate((call, {**result, "ok": True, "output": "done"})):
            pipeline.feed_event(dump_json(event), source="t", location=f"l{n}:{seq}", partition="p")
    pipeline.close()
    ids = sorted(info.session_id for info in store.sessions())
    assert ids == ["a\ufffd0000", "a\ufffdd83d", "\ufffdd800", "\ufffddfff"]
    for session_id in ids:
        call, result = store.steps(session_id)
        assert call.call_id == result.call_id == "c\ufffddc01"
        assert result.parent_step_id == call.step_id
        assert call.step_id.startswith(session_id + "/")
    assert store.count("dead_letters") == 0


def test_a_batch_costs_the_same_early_and_late_in_a_long_session(tmp_path: Path) -> None:
    """The fuzzer's slow class looked like a cost growing with the session: every input a
    fresh pipeline (a restart, an eviction) adding a few steps to one long session. The
    session is reopened from its checkpoint and rolled forward through the steps stored
    past it, so a batch late in a session of ~1,200 steps must cost what one early does."""
    import time

    store = Store.open(f"sqlite:///{tmp_path / 'long.db'}")
    detectors = detector_set({})
    start = {
        "type": "session_start",
        "session_id": "long",
        "seq": 0,
        "ts": 1_767_000_000,
        "goal": "Keep the service green",
        "system_instructions": "Run the tests before committing. Never force-push.",
    }
    seq = 1
    costs: list[float] = []
    try:
        for batch_index in range(300):
            events = [start] if batch_index == 0 else []
            for i in range(2):
                call = _event(
                    seq,
                    session_id="long",
                    tool="bash",
                    call_id=f"c{seq}",
                    arguments={"command": f"pytest -q tests/test_{i}.py"},
                )
                result = {
                    **_event(seq + 1, session_id="long", call_id=f"c{seq}"),
                    "type": "tool_result",
                    "ok": True,
                    "output": f"{seq} passed",
                }
                events += [call, result]
                seq += 2
            started = time.process_time()
            pipeline = Pipeline(store, detectors=detectors)
            for n, event in enumerate(events):
                pipeline.feed_event(
                    dump_json(event), source="t", location=f"{seq}:{n}", partition="p"
                )
            pipeline.close()
            costs.append(time.process_time() - started)
        assert store.count("steps") == seq
    finally:
        store.close()
    early, late = sorted(costs[20:70])[25], sorted(costs[-50:])[25]  # medians
    assert late <= 2 * early + 0.002, (
        f"a batch cost {early * 1e3:.1f} ms early, {late * 1e3:.1f} ms late"
    )
