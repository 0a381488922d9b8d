"""Where a run works, from OTLP spans and session events into the start step and the
session record, on SQLite and PostgreSQL: ``host.name``, ``process.working_directory`` and
the OTel VCS attributes (current and deprecated names) on the resource or the agent span."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from features.session.workspace import workspace_key
from models.records import SessionInfo
from models.store import Store
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

T0 = 1_767_225_600_000_000_000


def attrs(**values: str) -> list[dict[str, Any]]:
    return [{"key": k.replace("__", "."), "value": {"stringValue": v}} for k, v in values.items()]


def run(trace: int, session: str, resource: dict[str, str], agent: dict[str, str]) -> str:
    """One Collector file-exporter line: an agent span and a tool call under it."""
    trace_id = f"{trace:032x}"
    agent_span = {
        "traceId": trace_id,
        "spanId": f"{trace:08x}00000001",
        "name": "invoke_agent coder",
        "kind": 1,
        "startTimeUnixNano": str(T0 + trace * 10**9),
        "endTimeUnixNano": str(T0 + trace * 10**9 + 900_000_000),
        "attributes": attrs(
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="coder",
            gen_ai__conversation__id=session,
            gen_ai__input__messages=json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Fix the date parser"}]}]
            ),
        )
        + attrs(**{k.replace(".", "__"): v for k, v in agent.items()}),
    }
    tool_span = {
        "traceId": trace_id,
        "spanId": f"{trace:08x}00000002",
        "parentSpanId": f"{trace:08x}00000001",
        "name": "execute_tool bash",
        "kind": 1,
        "startTimeUnixNano": str(T0 + trace * 10**9 + 100_000_000),
        "endTimeUnixNano": str(T0 + trace * 10**9 + 200_000_000),
        "attributes": attrs(
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="bash",
            gen_ai__tool__call__id=f"call_{trace}",
            gen_ai__conversation__id=session,
            gen_ai__tool__call__arguments='{"command": "ls"}',
        ),
    }
    document = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": attrs(
                        service__name="coder-app",
                        **{k.replace(".", "__"): v for k, v in resource.items()},
                    )
                },
                "scopeSpans": [{"scope": {"name": "t"}, "spans": [agent_span, tool_span]}],
            }
        ]
    }
    return json.dumps(document)


def test_workspace_facts_reach_the_start_step_and_the_session_record(
    db_url: str, tmp_path: Path
) -> None:
    lines = [
        # all on the resource; the VCS ref under its deprecated names
        run(
            1,
            "ws-resource",
            {
                "host.name": "build-7",
                "process.working_directory": "/home/ci/dates",
                "vcs.repository.url.full": "https://github.com/acme/dates",
                "vcs.repository.ref.name": "main",
                "vcs.repository.ref.revision": "9d59409acf47",
            },
            {},
        ),
        # the agent span says where this agent works; the resource fills the rest
        run(
            2,
            "ws-span",
            {"host.name": "build-7", "process.working_directory": "/home/ci/shared"},
            {
                "process.working_directory": "/home/ci/wt-2",
                "vcs.repository.url.full": "git@github.com:acme/dates.git",
                "vcs.ref.head.name": "feature/x",
                "vcs.ref.head.revision": "0b1c2d3",
            },
        ),
        run(3, "ws-none", {}, {}),
    ]
    (tmp_path / "spans.otlp.jsonl").write_text("\n".join(lines) + "\n")
    start = {
        "type": "session_start",
        "session_id": "ws-events",
        "seq": 0,
        "ts": 1_767_225_700,
        "goal": "Fix the date parser",
        "workspace": "/home/me/dates",
        "host": "laptop",
        "repository": "acme/dates",
        "branch": "main",
        "commit": "aaaa111",
    }
    (tmp_path / "run.events.jsonl").write_text(json.dumps(start) + "\n")

    summary = replay([tmp_path], settings=Settings(db_url=db_url))
    assert sorted(summary.sessions) == ["ws-events", "ws-none", "ws-resource", "ws-span"]

    with Store.open(db_url) as store:
        infos = {i.session_id: i for i in store.sessions()}
        starts = {sid: next(s for s in store.steps(sid) if s.kind == "start") for sid in infos}

    def where(info: SessionInfo) -> tuple[str | None, ...]:
        return (info.host, info.workspace, info.repository, info.branch, info.revision)

    assert where(infos["ws-resource"]) == (
        "build-7",
        "/home/ci/dates",
        "https://github.com/acme/dates",
        "main",
        "9d59409acf47",
    )
    assert where(infos["ws-span"]) == (
        "build-7",
        "/home/ci/wt-2",
        "git@github.com:acme/dates.git",
        "feature/x",
        "0b1c2d3",
    )
    assert where(infos["ws-none"]) == (None, None, None, None, None)
    assert where(infos["ws-events"]) == (
        "laptop",
        "/home/me/dates",
        "acme/dates",
        "main",
        "aaaa111",
    )

    # the start step carries them under the keys every input uses
    assert {
        k: starts["ws-span"].detail.get(k) for k in ("host", "workspace", "branch", "commit")
    } == {
        "host": "build-7",
        "workspace": "/home/ci/wt-2",
        "branch": "feature/x",
        "commit": "0b1c2d3",
    }
    assert not {"host", "workspace", "repository"} & set(starts["ws-none"].detail)

    def key(info: SessionInfo) -> str | None:
        return workspace_key(
            host=info.host, directory=info.workspace, repository=info.repository, branch=info.branch
        )

    assert key(infos["ws-resource"]) == "git:github.com/acme/dates#main"
    assert key(infos["ws-span"]) == "git:github.com/acme/dates#feature/x"
    assert key(infos["ws-events"]) == "git:acme/dates#main"
    assert key(infos["ws-none"]) is None
