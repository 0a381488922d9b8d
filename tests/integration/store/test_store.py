"""The store over SQLite and PostgreSQL: round trips, idempotency, atomicity, migrations."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from models import migrations
from models.errors import StoreOpenError
from models.records import (
    Action,
    Alert,
    DeadLetter,
    Delivery,
    SessionInfo,
    Severity,
    Step,
    StepKind,
    alert_id,
    delivery_id,
)
from models.storable import Unstorable
from models.store import OffsetMovedError, SessionCursor, Store
from models.tables import Base, StepRow

SESSION = "sess_01J9ZK3V7QX4M2C8E5T6W1Y0BN"
OTHER = "sess_01J9ZK4A2B7N5P3Q8R6S1T0UVW"
T0 = 1_732_870_800_123_456_789  # 2024-11-29T09:00:00.123456789Z, event time in ns


def tool_call(seq: int, session_id: str = SESSION, **changes: object) -> Step:
    """A bash tool call as the session-event decoder builds it."""
    step = Step(
        step_id=f"{session_id}:call_{seq:04d}",
        session_id=session_id,
        kind=StepKind.TOOL_CALL,
        ts=T0 + seq * 1_500_000_000,
        seq=seq,
        agent="claude-code",
        tool="bash",
        action="bash(pytest -q tests/<path>)",
        call_id=f"toolu_{seq:04d}",
        arguments='{"command":"pytest -q tests/test_parser.py"}',
        source="event",
        source_ref=f"{session_id}#{seq}",
    )
    return step.with_(**changes)


def full_step() -> Step:
    """A step with every field set, unicode and nested JSON included."""
    return Step(
        step_id=f"{SESSION}:4bf92f3577b34da6a3ce929d0e0e4736:00f067aa0ba902b7",
        session_id=SESSION,
        kind=StepKind.EGRESS,
        ts=T0,
        seq=7,
        end_ts=T0 + 312_000_000,
        agent="claude-code/2.1 ✓",
        tool="web_fetch",
        action="web_fetch(GET https://api.github.com/repos/<owner>/<repo>)",
        call_id="toolu_01A09q90qw90lq917835lq9",
        arguments='{"note":"für Ünïcødé 日本語 🚀","url":"https://api.github.com/repos/acme/w"}',
        result='{"id":1296269,"full_name":"acme/widgets"}\n' * 3,
        text="Fetching the repository metadata — 残り 3 件",
        status="error",
        error="HTTP 403: rate limit exceeded (token [REDACTED])",
        model="claude-sonnet-4-5",
        finish_reason="tool_use",
        tokens_in=18_342,
        tokens_out=211,
        cost=0.057_291,
        model_session=2,
        egress_host="api.github.com",
        egress_url="https://api.github.com/repos/acme/widgets?per_page=100",
        egress_method="GET",
        http_status=403,
        idempotency_key="idem-7f3c2a",
        parent_step_id=f"{SESSION}:call_0006",
        source="otlp",
        source_ref="4bf92f3577b34da6a3ce929d0e0e4736:00f067aa0ba902b7",
        detail={
            "workspace": "/home/dev/widgets",
            "budget": {"usd": 5.0, "tokens": 2_000_000},
            "headers": ["accept", "user-agent"],
            "inferred": False,
            "nothing": None,
            "ratio": 0.25,
            "name": "Zoë ☃",
        },
    )


def loop_alert(onset: int, session_id: str = SESSION, detector: str = "runaway_loop") -> Alert:
    onset_step_id = f"{session_id}:call_{onset:04d}"
    return Alert(
        alert_id=alert_id(detector, session_id, onset_step_id),
        session_id=session_id,
        detector=detector,
        severity=Severity.CRITICAL,
        score=7.25,
        onset_seq=onset,
        onset_step_id=onset_step_id,
        evidence=(
            {"seq": onset, "step_id": onset_step_id, "source_ref": f"{session_id}#{onset}"},
            {"seq": onset + 4, "step_id": f"{session_id}:call_{onset + 4:04d}", "source_ref": ""},
        ),
        reason="The same 4-step cycle (edit → pytest → fail → edit) repeated 3 times "
        "without a passing test.",
        action=Action.ROLLBACK,
        checkpoint_id="ckpt_0003",
        ts=T0 + (onset + 12) * 1_500_000_000,
        raised_seq=onset + 12,
    )


def bad_span(n: int, payload: bytes = b'{"resourceSpans":[{"scopeSpans":') -> DeadLetter:
    return DeadLetter(
        source="otlp_http",
        location=f"http:/v1/traces#{n} resource_spans[0].scope_spans[1].spans[3]",
        reason="span has no session id (gen_ai.conversation.id, session.id)",
        payload=payload,
        content_type="application/json",
    )


# --- steps ------------------------------------------------------------------------------


def test_step_columns_are_the_record_fields() -> None:
    # Store.steps() builds records with Step(**row): the names must agree exactly.
    assert [c.name for c in StepRow.__table__.columns] == [f.name for f in dataclasses.fields(Step)]


def test_every_step_field_round_trips(store: Store) -> None:
    full = full_step()
    bare = Step(step_id=f"{OTHER}#0", session_id=OTHER, kind=StepKind.START, ts=T0, seq=0)
    with store.unit() as unit:
        assert unit.add_steps([full, bare]) == 2

    [got] = store.steps(SESSION)
    assert got == full
    assert type(got.kind) is StepKind
    assert got.detail == full.detail
    assert store.steps(OTHER) == [bare]
    assert store.steps(OTHER)[0].end_ts is None
    assert store.steps("sess_unknown") == []


def test_steps_come_back_ordered_by_seq(store: Store) -> None:
    seqs = list(range(40))
    random.Random(7).shuffle(seqs)
    with store.unit() as unit:
        unit.add_steps([tool_call(seq) for seq in seqs[:25]])
        unit.add_steps([tool_call(seq, OTHER) for seq in range(5)])
    with store.unit() as unit:
        unit.add_steps([tool_call(seq) for seq in seqs[25:]])

    assert [step.seq for step in store.steps(SESSION)] == list(range(40))
    assert [step.seq for step in store.steps(OTHER)] == list(range(5))


def test_adding_the_same_steps_twice_stores_them_once(store: Store) -> None:
    first = [tool_call(seq) for seq in range(1200)]
    with store.unit() as unit:
        assert unit.add_steps(first) == 1200
        assert unit.add_steps(first) == 0
    with store.unit() as unit:
        assert unit.add_steps(first[:10]) == 0
        # Overlapping batch: a redelivered tail plus new steps.
        assert unit.add_steps([*first[-50:], *(tool_call(s) for s in range(1200, 1230))]) == 30
        # Duplicates within one batch count once.
        assert unit.add_steps([tool_call(1230), tool_call(1230)]) == 1
    assert store.count("steps") == 1231
    assert store.count("sessions") == 1  # bare row created for the steps' foreign key


def test_existing_step_ids_of_a_long_list(store: Store) -> None:
    stored = [tool_call(seq) for seq in range(0, 2400, 2)]
    with store.unit() as unit:
        unit.add_steps(stored)
    asked = [tool_call(seq).step_id for seq in range(2400)]  # one bound list, not 2400
    with store.unit() as unit:
        assert unit.existing_step_ids(asked) == {step.step_id for step in stored}
        assert unit.existing_step_ids([]) == set()


def test_unsequenced_steps_are_refused(store: Store) -> None:
    with store.unit() as unit, pytest.raises(ValueError, match="unsequenced"):
        unit.add_steps([tool_call(0).with_(seq=-1)])


def test_two_steps_at_one_seq_is_an_error(store: Store) -> None:
    with pytest.raises(IntegrityError), store.unit() as unit:
        unit.add_steps([tool_call(3), tool_call(3).with_(step_id=f"{SESSION}:other")])
    assert store.count("steps") == 0


# --- alerts, deliveries, dead letters ---------------------------------------------------


def test_alerts_are_stored_once_and_only_new_ones_are_returned(store: Store) -> None:
    a, b = loop_alert(10), loop_alert(30)
    with store.unit() as unit:
        assert unit.add_alerts([a, a]) == [a]
    with store.unit() as unit:
        assert unit.add_alerts([b, a]) == [b]
        assert unit.add_alerts([a, b]) == []
        assert unit.add_alerts([]) == []
    assert store.alerts() == [a, b]
    assert store.count("alerts") == 2


def test_alerts_filter_and_order(store: Store) -> None:
    alerts = [
        loop_alert(30),
        loop_alert(10, detector="goal_drift"),
        loop_alert(10),
        loop_alert(5, OTHER),
        loop_alert(1, "sess_third"),
    ]
    with store.unit() as unit:
        unit.add_alerts(alerts)

    mine = store.alerts([SESSION])
    assert [(x.onset_seq, x.detector) for x in mine] == [
        (10, "goal_drift"),
        (10, "runaway_loop"),
        (30, "runaway_loop"),
    ]
    assert mine[1] == loop_alert(10)
    assert mine[1].evidence == loop_alert(10).evidence
    assert [x.session_id for x in store.alerts([OTHER, SESSION])] == [SESSION] * 3 + [OTHER]
    assert [x.session_id for x in store.alerts()] == [
        SESSION,
        SESSION,
        SESSION,
        OTHER,
        "sess_third",
    ]
    assert store.alerts(["sess_unknown"]) == []
    assert store.alerts([]) == []


def _deliveries(alert_ids: list[str], endpoints: list[str]) -> list[Delivery]:
    return [
        Delivery(
            delivery_id=delivery_id(alert_id, endpoint, Action.KILL),
            alert_id=alert_id,
            endpoint=endpoint,
            action=Action.KILL,
        )
        for alert_id in alert_ids
        for endpoint in endpoints
    ]


def test_deliveries_are_queued_once_per_alert_and_endpoint(store: Store) -> None:
    a, b = loop_alert(10), loop_alert(30)
    endpoints = ["hooks", "ops"]
    with store.unit() as unit:
        unit.add_alerts([a, b])
        assert unit.add_deliveries(_deliveries([a.alert_id, b.alert_id], endpoints), now=T0) == 4
    with store.unit() as unit:
        assert unit.add_deliveries(_deliveries([a.alert_id], endpoints)) == 0
        assert unit.add_deliveries([]) == 0
    assert store.count("deliveries") == 4
    with pytest.raises(IntegrityError), store.unit() as unit:
        unit.add_deliveries(_deliveries(["al_missing"], endpoints))


def test_dead_letters_keep_large_payloads_and_are_stored_once(store: Store) -> None:
    big = bad_span(1, payload=random.Random(11).randbytes(10 * 1024 * 1024) + b"\x00\xff")
    small = bad_span(2)
    with store.unit() as unit:
        assert unit.add_dead_letters([big]) == 1
    with store.unit() as unit:
        assert unit.add_dead_letters([small, big, small]) == 1
    assert store.count("dead_letters") == 2

    newest_first = store.dead_letters()
    assert newest_first == [small, big]
    assert newest_first[1].payload == big.payload
    assert newest_first[1].dead_letter_id == big.dead_letter_id
    assert store.dead_letters(limit=1) == [small]


# --- sessions and offsets ---------------------------------------------------------------


def test_upsert_session_merges_known_fields(store: Store) -> None:
    start = SessionInfo(
        session_id=SESSION,
        goal="Fix the failing parser test in widgets/ without touching the public API",
        agent="claude-code",
        workspace="/home/dev/widgets",
        repository="git@github.com:acme/widgets.git",
        policy_id="default-v3",
        budget={"usd": 5.0, "tokens": 2_000_000, "wall_s": 3600},
        started_ts=T0,
    )
    with store.unit() as unit:
        assert unit.session_cursor(SESSION) is None
        unit.upsert_session(start, SessionCursor(session_id=SESSION, next_seq=1, last_ts=T0))
        assert unit.session_cursor(SESSION) == SessionCursor(
            session_id=SESSION, next_seq=1, last_ts=T0
        )

    end = SessionInfo(session_id=SESSION, ended_ts=T0 + 10**12, end_status="ok", claimed_done=True)
    cursor = SessionCursor(
        session_id=SESSION, next_seq=412, model_session=2, last_ts=T0 + 10**12, state=b"\x80\x05"
    )
    with store.unit() as unit:
        unit.upsert_session(end, cursor)
        unit.upsert_session(SessionInfo(session_id=SESSION, agent="claude-code/2.1"), cursor)

    assert store.sessions([SESSION]) == [
        dataclasses.replace(
            start,
            agent="claude-code/2.1",
            ended_ts=T0 + 10**12,
            end_status="ok",
            claimed_done=True,
        )
    ]
    assert store.session_cursor(SESSION) == cursor
    assert store.session_cursor(OTHER) is None
    with store.engine.connect() as connection:
        version = connection.execute(text("SELECT updated_seq FROM sessions")).scalar_one()
    assert version == 3


def test_upsert_session_keeps_claimed_done_false_and_clears_state(store: Store) -> None:
    with store.unit() as unit:
        unit.upsert_session(
            SessionInfo(session_id=SESSION, claimed_done=False),
            SessionCursor(session_id=SESSION, next_seq=3, state=b"detectors"),
        )
        unit.upsert_session(SessionInfo(session_id=SESSION), SessionCursor(session_id=SESSION))
    [info] = store.sessions()
    assert info.claimed_done is False
    assert store.session_cursor(SESSION) == SessionCursor(session_id=SESSION)


def test_upsert_session_refuses_mismatched_ids(store: Store) -> None:
    with store.unit() as unit, pytest.raises(ValueError, match="cursor is for"):
        unit.upsert_session(SessionInfo(session_id=SESSION), SessionCursor(session_id=OTHER))


def test_upsert_sessions_writes_each_and_returns_the_unstorable_unwritten(store: Store) -> None:
    with store.unit() as unit:
        unit.upsert_session(
            SessionInfo(session_id=OTHER, goal="old goal"), SessionCursor(session_id=OTHER)
        )
    cursor = SessionCursor(session_id=SESSION, next_seq=4, last_ts=T0, state=b"s")
    too_late = SessionInfo(session_id="sess_far", started_ts=2**70)  # no BIGINT holds it
    with store.unit() as unit:
        refused = unit.upsert_sessions(
            [
                (SessionInfo(session_id=SESSION, agent="codex", started_ts=T0), cursor),
                (too_late, SessionCursor(session_id="sess_far", next_seq=1)),
                (SessionInfo(session_id=OTHER, agent="gemini"), SessionCursor(session_id=OTHER)),
            ]
        )
    assert [(info, type(error)) for info, error in refused] == [(too_late, Unstorable)]
    assert "started_ts" in str(refused[0][1])
    assert store.sessions() == sorted(
        [
            SessionInfo(session_id=OTHER, goal="old goal", agent="gemini"),
            SessionInfo(session_id=SESSION, agent="codex", started_ts=T0),
        ],
        key=lambda info: info.session_id,
    )
    assert store.session_cursor(SESSION) == cursor
    with store.engine.connect() as connection:
        versions: dict[str, int] = dict(
            connection.execute(text("SELECT session_id, updated_seq FROM sessions")).all()
        )
    assert versions == {SESSION: 1, OTHER: 2}


def test_move_offsets_is_a_compare_and_set_of_every_partition(store: Store) -> None:
    source = "kafka:trajwatch_steps"
    with store.unit() as unit:
        unit.move_offsets({(source, "0"): (None, 10), (source, "1"): (None, 4)})
    with store.unit() as unit:
        unit.move_offsets(
            {(source, "0"): (10, 25), (source, "1"): (4, 5), (source, "2"): (None, 1)}
        )
    assert [store.get_offset(source, p) for p in "012"] == [25, 5, 1]
    # another worker moved partition 1 on: nothing of the batch is stored
    for moves in (
        {(source, "0"): (25, 30), (source, "1"): (4, 9)},
        {(source, "0"): (25, 30), (source, "2"): (None, 3)},
    ):
        with pytest.raises(OffsetMovedError, match="no longer there"), store.unit() as unit:
            unit.add_steps([tool_call(0)])
            unit.move_offsets(moves)
        assert [store.get_offset(source, p) for p in "012"] == [25, 5, 1]
        assert store.count("steps") == 0


def test_session_cursors_loads_the_known_ones_in_one_call(store: Store) -> None:
    cursor = SessionCursor(session_id=SESSION, next_seq=7, model_session=1, last_ts=T0, state=b"s")
    with store.unit() as unit:
        assert unit.session_cursors([SESSION, OTHER]) == {}
        unit.upsert_session(SessionInfo(session_id=SESSION), cursor)
        unit.upsert_session(SessionInfo(session_id=OTHER), SessionCursor(session_id=OTHER))
        assert unit.session_cursors([SESSION, "unknown", SESSION]) == {SESSION: cursor}
        assert unit.session_cursors([OTHER, SESSION]) == {
            SESSION: cursor,
            OTHER: SessionCursor(session_id=OTHER),
        }


def test_sessions_lists_known_sessions_by_id(store: Store) -> None:
    with store.unit() as unit:
        unit.add_steps([tool_call(0, OTHER), tool_call(0)])
    assert [s.session_id for s in store.sessions()] == sorted([SESSION, OTHER])
    assert store.sessions([OTHER, "sess_unknown"]) == [SessionInfo(session_id=OTHER)]
    assert store.sessions([]) == []


def test_offsets_are_set_and_overwritten_per_partition(store: Store) -> None:
    assert store.get_offset("kafka:otlp_spans", "3") is None
    with store.unit() as unit:
        unit.set_offset("kafka:otlp_spans", "3", 1042)
        unit.set_offset("kafka:otlp_spans", "0", 7)
        unit.set_offset("file:/var/log/agent/session.jsonl", "9f86d081884c7d65", 120)
    with store.unit() as unit:
        unit.set_offset("kafka:otlp_spans", "3", 2**40)  # int64 positions
    assert store.get_offset("kafka:otlp_spans", "3") == 2**40
    assert store.get_offset("kafka:otlp_spans", "0") == 7
    assert store.get_offset("file:/var/log/agent/session.jsonl", "9f86d081884c7d65") == 120
    assert store.get_offset("kafka:otlp_spans", "1") is None


def test_the_silence_watch_is_kept_per_lane_and_ends_when_nothing_is_due(store: Store) -> None:
    lane, other = "kafka:trajwatch_steps/0", "kafka:trajwatch_steps/1"
    with store.unit() as unit:
        unit.watch_silences(
            [(lane, SESSION, "otlp_spans/0", 2**40), (lane, OTHER, "otlp_spans/1", 5)]
        )
        unit.watch_silences([(other, "sess_b", "otlp_spans/0", 7)])
    with store.unit() as unit:  # a later batch: one moved on, one has nothing more due
        unit.watch_silences([(lane, SESSION, "otlp_spans/2", 9), (lane, OTHER, "x", None)])
    assert store.silence_watch(lane) == [(SESSION, "otlp_spans/2", 9)]
    assert store.silence_watch(other) == [("sess_b", "otlp_spans/0", 7)]
    with store.unit() as unit:
        unit.watch_silences([(lane, SESSION, "otlp_spans/2", None), (lane, "gone", "y", None)])
    assert store.silence_watch(lane) == []


# --- transactions -----------------------------------------------------------------------


def test_a_failed_unit_leaves_nothing(store: Store) -> None:
    alert = loop_alert(10)
    with pytest.raises(RuntimeError, match="detector crashed"), store.unit() as unit:
        unit.add_steps([tool_call(seq) for seq in range(20)])
        unit.add_alerts([alert])
        unit.add_deliveries(_deliveries([alert.alert_id], ["hooks"]))
        unit.add_dead_letters([bad_span(1)])
        unit.upsert_session(SessionInfo(session_id=SESSION), SessionCursor(session_id=SESSION))
        unit.set_offset("kafka:otlp_spans", "3", 1042)
        raise RuntimeError("detector crashed")

    for table in ("sessions", "steps", "alerts", "deliveries", "dead_letters", "input_offsets"):
        assert store.count(table) == 0, table
    assert store.get_offset("kafka:otlp_spans", "3") is None


def test_a_unit_sees_its_own_writes_before_commit(store: Store) -> None:
    with store.unit() as unit:
        unit.add_steps([tool_call(0)])
        assert unit.existing_step_ids([tool_call(0).step_id]) == {tool_call(0).step_id}


def test_count_refuses_unknown_tables(store: Store) -> None:
    with pytest.raises(ValueError, match="unknown table 'users'"):
        store.count("users")


# --- opening and migrations -------------------------------------------------------------


def test_open_refuses_other_databases() -> None:
    with pytest.raises(StoreOpenError, match="unsupported database 'mysql'"):
        Store.open("mysql+pymysql://root@localhost/trajwatch")


def test_sqlite_connections_use_wal_and_foreign_keys(tmp_path: Path) -> None:
    with (
        Store.open(f"sqlite:///{tmp_path / 'trajwatch.db'}") as store,
        store.engine.connect() as connection,
    ):
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000


def test_migrations_upgrade_an_existing_database(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        migrations.upgrade(engine, "0001")
        assert migrations.current_revision(engine) == "0001"
    finally:
        engine.dispose()
    with Store.open(db_url, migrate=False) as old, old.unit() as unit:
        unit.add_steps([full_step()])
        unit.set_offset("kafka:otlp_spans", "0", 99)

    with Store.open(db_url) as upgraded:
        assert upgraded.steps(SESSION) == [full_step()]
        assert upgraded.get_offset("kafka:otlp_spans", "0") == 99
        head = ScriptDirectory.from_config(migrations.alembic_config()).get_current_head()
        assert migrations.current_revision(upgraded.engine) == head
    with Store.open(db_url) as again:  # upgrading a current database changes nothing
        assert again.count("steps") == 1


def test_migrated_schema_matches_the_orm_metadata(store: Store) -> None:
    with store.engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "compare_server_default": True}
        )
        assert compare_metadata(context, Base.metadata) == []
