"""Steps released under their trace id before their session was known are adopted into
it (:mod:`ingest.pipeline.adoption`): the settled session is an in-order delivery's, the
provisional session is gone, and what it raised is kept, superseded, naming the adopter."""

from __future__ import annotations

import json

import pytest

from detectors.registry import DetectorSet
from ingest.decoded import Decoded, SpanRecord
from ingest.pipeline.adoption import ADOPTED
from ingest.pipeline.engine import Pipeline
from ingest.sources.repartition import decode_resolved, encode_resolved
from models.store import Store
from tests.unit.ingest.test_rejudge import OrderProbe
from trajwatch.settings import Settings

TRACE = "ab" * 16
SESSION = "conv-adopt"
SEC = 1_000_000_000
T0 = 1_700_000_000 * SEC


def span(
    n: int, parent: int | None, name: str, start: int, end: int, **attrs: object
) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=f"{n:016x}",
        parent_span_id=f"{parent:016x}" if parent else None,
        name=name,
        kind=3 if name == "GET" else 1,
        start_ns=T0 + start * SEC,
        end_ns=T0 + end * SEC,
        attributes=attrs,
    )


def model(n: int, start: int, end: int, response: str) -> SpanRecord:
    return span(
        n,
        1,
        "chat m",
        start,
        end,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.response.id": response,
            "gen_ai.usage.input_tokens": 100 + n,
            "gen_ai.usage.output_tokens": 10,
        },
    )


def tool(n: int, start: int, end: int, call: str) -> SpanRecord:
    return span(
        n,
        1,
        "execute_tool fetch",
        start,
        end,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "fetch",
            "gen_ai.tool.call.id": call,
            "gen_ai.tool.call.arguments": json.dumps({"url": f"https://example.org/{call}"}),
        },
    )


ROOT = span(
    1,
    None,
    "invoke_agent a",
    0,
    100,
    **{
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": SESSION,
        "gen_ai.input.messages": json.dumps([{"role": "user", "content": "Fetch the pages"}]),
    },
)
# nothing below names the session: only the root (the agent span) does
EARLY = [
    model(2, 5, 8, "r1"),
    tool(3, 10, 20, "t1"),
    span(
        4, 3, "GET", 11, 12, **{"http.request.method": "GET", "url.full": "https://example.org/t1"}
    ),
]
LATER = [model(5, 30, 32, "r2"), tool(6, 40, 45, "t2"), model(7, 50, 52, "r3")]


def pipeline(store: Store) -> Pipeline:
    return Pipeline(store, settings=Settings(lateness_ms=0), detectors=DetectorSet([OrderProbe()]))


def settled(store: Store) -> tuple[list[tuple[object, ...]], list[str]]:
    steps: list[tuple[object, ...]] = [
        (s.session_id, s.seq, s.step_id, str(s.kind), s.parent_step_id, sorted(s.detail))
        for info in store.sessions()
        for s in store.steps(info.session_id)
    ]
    return steps, sorted(a.alert_id for a in store.alerts())


@pytest.fixture
def in_order() -> tuple[list[tuple[object, ...]], list[str]]:
    store = Store.open("sqlite://")
    try:
        p = pipeline(store)
        spans = sorted([ROOT, *EARLY, *LATER], key=lambda s: s.end_ns)
        p.feed_decoded(Decoded(spans=spans), partition="0")
        p.close()
        return settled(store)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("restart", "late_egress"),
    [(False, False), (True, False), (False, True)],
    ids=["one-process", "restarted", "egress-after-the-name"],
)
def test_steps_stored_under_the_trace_id_are_adopted_when_the_session_is_named(
    store: Store,
    in_order: tuple[list[tuple[object, ...]], list[str]],
    restart: bool,
    late_egress: bool,
) -> None:
    """``late_egress``: the HTTP span comes with the root, so the egress step is placed in
    the named session while the tool call that caused it is under the trace id."""
    early, egress = (EARLY[:2], EARLY[2:]) if late_egress else (EARLY, [])
    first = pipeline(store)
    for batch in (early, LATER):  # released (lateness 0) before any span names the session
        first.feed_decoded(Decoded(spans=batch), partition="0")
        first.commit()
    assert {info.session_id for info in store.sessions()} == {TRACE}
    provisional = store.alerts([TRACE])
    assert provisional  # a call right after a model call, judged under the trace id
    if restart:  # nothing of the first process but what it stored
        first = pipeline(store)
    first.feed_decoded(Decoded(spans=[ROOT, *egress]), partition="0")
    first.close()

    assert settled(store) == in_order  # one session, its steps and standing alerts in order
    assert first.stats.adopted == 1
    assert {info.session_id for info in store.sessions()} == {SESSION}
    assert store.steps(TRACE) == [] and store.score_chunks(TRACE) == []
    kept = {a.alert_id: a for a in store.alerts([TRACE], superseded=True)}
    assert set(kept) == {a.alert_id for a in provisional}  # kept, no longer standing
    assert {a.superseded for a in kept.values()} == {ADOPTED.format(session=SESSION)}
    tool_calls = [s for s in store.steps(SESSION) if str(s.kind) == "tool_call"]
    assert [s.step_id for s in tool_calls] == [f"{SESSION}/tool_call/t1", f"{SESSION}/tool_call/t2"]


def test_a_session_whose_traces_were_never_provisional_is_not_judged_again(
    store: Store,
) -> None:
    p = pipeline(store)
    for batch in ([ROOT, *EARLY], LATER):  # the session is named before anything is released
        p.feed_decoded(Decoded(spans=batch), partition="0")
        p.commit()
    p.close()
    assert p.stats.adopted == 0
    assert {info.session_id for info in store.sessions()} == {SESSION}


@pytest.mark.parametrize("one_owner", [False, True], ids=["two-owners", "one-owner-one-commit"])
def test_sequencing_workers_adopt_through_the_shared_store(store: Store, one_owner: bool) -> None:
    """The Kafka worker's path: one ordering stage resolves the drafts, the repartition
    records carry them to the worker owning each session (here the trace-id session's and
    the named session's are two pipelines on one store): the named session's worker adopts
    what the other stored, and the settled session is one process's in-order delivery.
    ``one_owner``: one worker owns both and commits them together (the provisional
    session opened and adopted in one commit)."""
    quiet = Settings(lateness_ms=0, silence_first_ms=0)  # a worker places no silence steps
    reference = Store.open("sqlite://")
    try:
        alone = Pipeline(reference, settings=quiet, detectors=DetectorSet([OrderProbe()]))
        alone.feed_decoded(
            Decoded(spans=sorted([ROOT, *EARLY, *LATER], key=lambda s: s.end_ns)), partition="0"
        )
        alone.close()
        expected = settled(reference)
    finally:
        reference.close()

    ordering = Pipeline(store, settings=quiet)
    owners = {
        name: Pipeline(store, settings=quiet, detectors=DetectorSet([OrderProbe()]))
        for name in (TRACE, SESSION)
    }
    if one_owner:
        owners[TRACE] = owners[SESSION]
    for batch in (EARLY, LATER, [ROOT]):
        ordering.feed_decoded(Decoded(spans=batch), partition="0")
        if batch[0] is ROOT:  # the input's end: the root's end is released too
            ordering.end_partition("0")
        for item in ordering.resolve():  # through the topic, keyed by session
            owners[item.session_id].feed_resolved([decode_resolved(encode_resolved(item))])
        if not one_owner:
            for owner in owners.values():
                owner.commit()
    for owner in {id(o): o for o in owners.values()}.values():
        owner.close()
    assert owners[SESSION].stats.adopted == 1
    assert settled(store) == expected
