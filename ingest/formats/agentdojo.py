"""AgentDojo run records (chat transcripts with tool calls) → step drafts.

A record is ``{"index", "messages": [...], "metadata": {...}}``: a system message,
the user's task, then assistant messages (``content`` plus ``tool_calls`` with
``function.name``/``function.arguments``) and ``tool`` messages carrying the
results (``tool_call.id``). The transcript has no times, so steps get a
synthetic clock: one second per message from a fixed origin, which keeps the
order and makes replays deterministic.

The session id is ``agentdojo:<file stem>:<line number>`` (0-based, as in the
corpus' ``labels_index.csv``), so labels join without a lookup table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from features.calls.actions import tool_call_fields
from features.calls.canonical import canonical_json
from features.text.clip import excerpt
from ingest.decoded import Draft
from models.errors import DecodeError
from models.records import Step, StepKind

ORIGIN_NS = 1_718_000_000 * 1_000_000_000  # 2024-06-10: the corpus' runs are from mid-2024
SECOND = 1_000_000_000


def is_agentdojo(obj: Any) -> bool:
    return isinstance(obj, Mapping) and isinstance(obj.get("messages"), list) and "metadata" in obj


def is_header(obj: Any) -> bool:
    """The first line of an AgentDojo file: run metadata, no transcript."""
    return isinstance(obj, Mapping) and set(obj) == {"metadata"}


def session_id_for(stem: str, line_no: int) -> str:
    return f"agentdojo:{stem}:{line_no}"


def record_drafts(record: Mapping[str, Any], *, session_id: str) -> list[Draft]:
    """The drafts of one record; raises DecodeError naming what is malformed."""
    messages = record.get("messages")
    if not isinstance(messages, list):
        raise DecodeError("messages must be a list")
    metadata = _mapping(record.get("metadata"))
    agent = str(metadata.get("model") or "agent")
    drafts: list[Draft] = []
    system = ""
    started = False

    def add(
        kind: StepKind, index: int, suffix: str = "", natural: str | None = None, **fields: Any
    ) -> None:
        ref = f"{session_id}#{index}{suffix}"
        step = Step(
            step_id="",
            session_id=session_id,
            kind=kind,
            ts=ORIGIN_NS + index * SECOND + len(suffix),
            agent=agent,
            source="agentdojo",
            source_ref=ref,
            **fields,
        )
        drafts.append(
            Draft(step=step, fallback_id=ref, natural_key=natural, session_hint=session_id)
        )

    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise DecodeError(f"messages[{index}] is not an object")
        role = message.get("role")
        content = message.get("content")
        text = (
            content
            if isinstance(content, str)
            else (canonical_json(content) if content is not None else "")
        )
        if role == "system":
            system = text
        elif role == "user" and not started:
            detail: dict[str, Any] = {"suite": metadata.get("suite_name")}
            if system:
                detail["system_instructions"] = excerpt(system, 4096)
            add(StepKind.START, index, natural="start", text=excerpt(text), detail=detail)
            started = True
        elif role == "assistant":
            add(StepKind.MODEL_CALL, index, text=excerpt(text) or None, status="ok")
            for j, call in enumerate(message.get("tool_calls") or []):
                function = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(function, Mapping):
                    raise DecodeError(f"messages[{index}].tool_calls[{j}] has no function")
                call_id = call.get("id") or f"{index}.{j}"
                add(
                    StepKind.TOOL_CALL,
                    index,
                    f".{j + 1}",
                    natural=f"tool_call/{call_id}",
                    call_id=call_id,
                    **tool_call_fields(function.get("name"), function.get("arguments")),
                )
        elif role == "tool":
            info = _mapping(message.get("tool_call"))
            call_id = info.get("id") or f"{index}"
            error = message.get("error")
            add(
                StepKind.TOOL_RESULT,
                index,
                natural=f"tool_result/{call_id}",
                call_id=call_id,
                tool=info.get("function"),
                result=excerpt(text) or None,
                status="error" if error else "ok",
                error=excerpt(str(error)) if error else None,
            )
    if drafts:
        add(StepKind.END, len(messages), natural="end", detail={"end_status": None})
    return drafts


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
