"""The run a session continues, read from each input that names it (docs/inputs.md, "The
run a session continues"): OTLP (a resumed run in a new trace and a new conversation, the
resume webhook's session id echoed on its resource), session events, Codex rollouts and
Claude Code transcripts. Over OTLP, replayed into SQLite and PostgreSQL, the resumer that
sends again what its predecessor sent is a duplicate naming that run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from detectors.duplicate_side_effect import DuplicateSideEffect
from detectors.registry import DetectorSet
from features.session.lineage import PREDECESSOR
from ingest.formats.claude_code import transcript_drafts
from ingest.formats.codex import rollout_drafts
from ingest.formats.session_events import decode_event
from models.records import StepKind
from models.store import Store
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

T0 = 1_767_225_600_000_000_000
MAIL = '{"to": "customers@example.com", "template": "incident-4711"}'


def attrs(values: dict[str, str]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]


def run(trace: int, session: str, at: int, resource: dict[str, str], tools: list[str]) -> list[str]:
    """Collector file-exporter lines of a run in its own trace: a send_email tool span per
    result in ``tools``, then the agent span above them (exported last, when it ends)."""
    trace_id, base = f"{trace:032x}", T0 + at * 10**9
    root = f"{trace:08x}00000001"
    spans = [
        {
            "traceId": trace_id,
            "spanId": root,
            "name": "invoke_agent ops",
            "kind": 1,
            "startTimeUnixNano": str(base),
            "endTimeUnixNano": str(base + 60 * 10**9),
            "attributes": attrs(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "ops",
                    "gen_ai.conversation.id": session,
                }
            ),
        }
    ]
    for i, result in enumerate(tools):
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{trace:08x}0000001{i}",
                "parentSpanId": root,
                "name": "execute_tool send_email",
                "kind": 1,
                "startTimeUnixNano": str(base + (i + 1) * 10**9),
                "endTimeUnixNano": str(base + (i + 1) * 10**9 + 500_000_000),
                "attributes": attrs(
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "send_email",
                        "gen_ai.tool.call.id": f"call_{trace}_{i}",
                        "gen_ai.conversation.id": session,
                        "gen_ai.tool.call.arguments": MAIL,
                        "gen_ai.tool.call.result": result,
                    }
                ),
            }
        )
    resource_attrs = attrs({"service.name": "ops-worker", **resource})
    return [
        json.dumps(
            {
                "resourceSpans": [
                    {
                        "resource": {"attributes": resource_attrs},
                        "scopeSpans": [{"scope": {"name": "t"}, "spans": batch}],
                    }
                ]
            }
        )
        for batch in (spans[1:], spans[:1])
    ]


@pytest.mark.parametrize("lateness_ms", [0, 3_600_000])
def test_a_resumed_run_in_a_new_trace_linked_by_its_resource_is_judged_against_the_dead_run(
    db_url: str, tmp_path: Path, lateness_ms: int
) -> None:
    # lateness 0: each agent span, exported after its tools, is placed late and the run is
    # judged again in event-time order when it settles; an hour: it is placed first
    link = {"trajwatch.predecessor.session_id": "conv-dead"}
    lines = [
        *run(1, "conv-dead", 0, {}, ["sent 120/120 emails"]),
        *run(2, "conv-resumed", 1800, link, ["sent 120/120 emails"]),
        # the same mail from a run that continues nothing: another incident's own mailing
        *run(3, "conv-other", 3600, {}, ["sent 120/120 emails"]),
    ]
    (tmp_path / "spans.otlp.jsonl").write_text("\n".join(lines) + "\n")
    replay(
        [tmp_path],
        settings=Settings(db_url=db_url, lateness_ms=lateness_ms),
        detectors=DetectorSet([DuplicateSideEffect()]),
    )
    with Store.open(db_url) as store:
        infos = {i.session_id: i.predecessor for i in store.sessions()}
        found = [a for a in store.alerts() if a.detector == "duplicate_side_effect"]
    assert infos == {"conv-dead": None, "conv-resumed": "conv-dead", "conv-other": None}
    (alert,) = found
    assert alert.session_id == "conv-resumed"
    assert "session conv-dead" in alert.reason and "sent 120/120 emails" in alert.reason
    assert [r.get("session_id") for r in alert.evidence] == [None, "conv-dead"]


def test_session_events_name_the_predecessor_on_the_start() -> None:
    start = {
        "type": "session_start",
        "session_id": "b",
        "seq": 0,
        "ts": 1_767_225_600,
        "goal": "Continue the work of session a",
        "predecessor_session_id": "a",
    }
    drafts, dead = decode_event(json.dumps(start), source="t", location="l", arrival=0)
    assert dead is None
    assert drafts[0].step.detail[PREDECESSOR] == "a"
    too_long = {**start, "predecessor_session_id": "x" * 513}
    assert decode_event(json.dumps(too_long), source="t", location="l", arrival=0)[1] is not None


def codex_start_detail(meta: dict[str, Any]) -> dict[str, Any]:
    lines = [
        {
            "timestamp": "2026-03-04T10:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "0199aa00-0000-7000-8000-000000000002", "cwd": "/w", **meta},
        },
        {
            "timestamp": "2026-03-04T10:00:01.000Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Continue the migration"},
        },
    ]
    drafts, rejects = rollout_drafts([(str(i), x) for i, x in enumerate(lines)])
    assert rejects == []
    (start,) = [d.step for d in drafts if d.step.kind == StepKind.START]
    return dict(start.detail)


def test_a_forked_codex_rollout_names_the_thread_it_continues_but_a_sub_agent_does_not() -> None:
    forked = codex_start_detail({"forked_from_id": "0199aa00-0000-7000-8000-000000000001"})
    assert forked[PREDECESSOR] == "0199aa00-0000-7000-8000-000000000001"
    spawned = {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}
    sub = codex_start_detail({"forked_from_id": "p", "source": spawned})
    assert PREDECESSOR not in sub
    assert PREDECESSOR not in codex_start_detail({})


def test_a_claude_code_session_forked_from_another_names_it() -> None:
    line = {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "cwd": "/w",
        "sessionId": "new-session",
        "uuid": "00000000-0000-4000-8000-000000000001",
        "timestamp": "2026-02-12T16:00:00.000Z",
        "forkedFrom": {
            "sessionId": "old-session",
            "messageUuid": "00000000-0000-4000-8000-000000000009",
        },
        "message": {"role": "user", "content": "Pick up where the last run stopped"},
    }
    drafts, rejects = transcript_drafts([("1", line)])
    assert rejects == []
    (start,) = [d.step for d in drafts if d.step.kind == StepKind.START]
    assert start.detail[PREDECESSOR] == "old-session"
    plain = {k: v for k, v in line.items() if k != "forkedFrom"}
    (start,) = [d.step for d in transcript_drafts([("1", plain)])[0]]
    assert PREDECESSOR not in start.detail
