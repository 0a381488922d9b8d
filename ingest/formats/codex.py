"""OpenAI Codex CLI session rollouts → step drafts.

Codex keeps each session as JSON lines in
``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl``, one
``{"timestamp", "type", "payload"}`` object a line (the envelope of the Rust
``RolloutLine``; field names from ``codex-rs/protocol``; newer releases add an
``ordinal`` and, beside a response item's payload, its harness ``metadata``: neither
changes a step). Read here:

- ``session_meta``: the session ``id`` (else ``session_id``), ``cwd`` (the workspace) and ``git``
  (``repository_url``, ``commit_hash``: the task's repository and base commit), and
  ``forked_from_id``: the thread a forked rollout continues, its predecessor
  (:mod:`features.session.lineage`; not a sub-agent's, whose ``source.subagent`` names its
  parent: a parent is not a run the sub-agent resumes);
- ``turn_context``: the ``model`` of the calls that follow, ``approval_policy`` and
  ``sandbox_policy``;
- ``event_msg`` ``user_message``: the first is the session's ``start`` and goal, later ones
  ride on the next model call (``detail.user_message``); ``error``: an ``error`` step;
- ``response_item``: the items of one model response (``reasoning``, assistant
  ``message``, tool calls) are **one** ``model_call``, placed before them at the first
  one's time; an input item (a ``user``/``developer`` message, a tool output) or a turn
  boundary (``task_started``, ``task_complete``, ``turn_aborted``) ends the response.
  This holds whether or not the rollout has ``token_count`` events (Codex Desktop writes
  none); where it has, a ``token_count`` is the usage of the latest response
  (``last_token_usage``: ``input_tokens``, cached ones included; ``output_tokens``,
  reasoning ones included), or a call of its own when that response already has one; a
  ``token_count`` whose ``total_token_usage`` did not change is a repeat Codex writes
  (rate-limit refreshes), not a call;
- tool calls (the ``ResponseItem`` variants of ``codex-rs/protocol/src/models.rs``):
  ``function_call`` (``arguments`` a JSON string), ``custom_tool_call`` (``apply_patch``'s
  patch as ``input``), ``local_shell_call`` (an argv and its working directory),
  ``tool_search_call``, and ``web_search_call`` / ``image_generation_call`` (run by the
  API: their ``action`` / ``revised_prompt`` are the arguments, no output item follows)
  are ``tool_call`` steps; ``function_call_output`` / ``custom_tool_call_output`` /
  ``tool_search_output`` their ``tool_result`` (a shell's exit code, from the JSON
  ``metadata.exit_code`` or the ``Exit code: N`` / ``Process exited with code N`` header,
  fails the call when non-zero; the output Codex writes for a call it did not run to its
  end, ``aborted`` or ``aborted by user …``, makes the result ``cancelled``); assistant
  ``message`` text is the model call's output;
- ``token_usage_record`` (newer releases: the history crate's ``RolloutItem::TokenUsageRecord``,
  one line per completed response, ``TokenUsageRecord`` in ``codex-rs/protocol``): its
  ``usage`` is the response's own (``input_tokens``/``output_tokens``, counted as
  ``last_token_usage`` is), its ``attribution.model`` the model, read as a ``token_count``
  is; a ``token_count`` of the same tokens right after it (no response item between; the
  two kinds of line may come in either order) counts the same response, not another;
- ``compacted``: an explicit ``compaction`` with its summary;
- the first ``user`` input item when it is the project's ``AGENTS.md`` (Codex writes it
  as ``# AGENTS.md instructions for <cwd>`` then ``<INSTRUCTIONS>…``): the start's
  ``system_instructions``, the rules :mod:`features.policy.instructions` reads.

Other line, event and item types (``agent_message`` events repeat the assistant
message; ghost snapshots, exec and patch events, …) carry no step and are skipped; a line
that is not the envelope, or whose known item lacks a required field, is a dead letter
with the reason, and the rest of the file is kept. A rollout is delivered whole and put
in event-time order, like a Claude Code transcript. Pure.

The TypeScript CLI's rollouts (spring 2025, ``rollout-<date>-<id>.json``: one document
``{"session", "items"}``) are read as such a rollout (:func:`document_lines`).

Rollouts of Codex CLI before the envelope (spring-summer 2025) are read too: a first line
``{"id", "timestamp", "instructions", "git"}`` (the session meta), then bare response
items, one a line, with no time of their own, and ``{"record_type": "state"}`` markers
between turns. Each item takes the meta's time (file order is kept among equal times);
with no ``user_message`` events, the first user ``message`` item that is not one Codex
wrote itself (``<environment_context>``, ``<user_instructions>``: the latter the
start's ``system_instructions``) is the start, later ones the next call's prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from features.calls.actions import tool_call_fields, tool_result_fields
from features.calls.canonical import canonical_json
from features.session.lineage import PREDECESSOR
from features.text.clip import excerpt
from ingest.decoded import Draft
from ingest.formats.session_events import parse_ts
from ingest.semconv.attributes import json_value, positive_int
from models.errors import DecodeError
from models.records import Step, StepKind

__all__ = [
    "AGENT",
    "SOURCE",
    "document_lines",
    "is_codex_document",
    "is_codex_line",
    "rollout_drafts",
]

SOURCE = "codex"
AGENT = "codex"
_EXIT_RE = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)", re.MULTILINE)
"""A shell's exit code in the header of its freeform output (``Exit code: 1`` of the shell
tool, ``Process exited with code 1`` of ``exec_command``/``write_stdin``), before
``Output:``."""
_ENVELOPE_RE = re.compile(
    r"(?:(?:Chunk ID: \w+|Wall time: [0-9.]+ seconds|Exit code: -?\d+"
    r"|Process exited with code -?\d+|Process running with session ID \d+"
    r"|Original token count: \d+|Total output lines: \d+)(?:\n|$))+"
)
"""The header lines of a shell's freeform output before ``Output:`` (``exec_command``,
``write_stdin``, the shell tool): the envelope, not what the command said."""
_ABORTED = re.compile(r"(?:Wall time: [0-9.]+ seconds\n)?aborted(?: by user(?: after [0-9.]+s)?)?")
"""The output Codex writes for a call it did not run to its end: ``aborted`` for a call
left without output (``normalize`` of the history), ``aborted by user after 1.5s`` or,
for a shell, ``Wall time: 1.5 seconds`` / ``aborted by user`` when the turn was
interrupted (``AbortedToolOutput``)."""
_CALL_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "image_generation_call",
    }
)
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_TURN_EVENTS = frozenset(
    {
        "user_message",
        "task_started",
        "turn_started",
        "task_complete",
        "turn_complete",
        "turn_aborted",
    }
)
_AGENTS_MD_HEADER = "# AGENTS.md instructions for "
"""How Codex introduces the AGENTS.md it sends as the session's first user input item."""
_INJECTED = ("<environment_context>", "<user_instructions>", _AGENTS_MD_HEADER)
"""How the user-role messages begin that Codex writes itself (the environment, the
project's instructions), not the person."""
_SESSION_IN_NAME = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.IGNORECASE
)


_BARE_ITEMS = frozenset({"message", "reasoning", *_CALL_ITEMS, *_OUTPUT_ITEMS})


def is_codex_line(obj: Any) -> bool:
    """A line of a Codex rollout: the ``{"timestamp", "type", "payload"}`` envelope, of any
    line type (newer releases add some; those not read here carry no step), or a line of
    a rollout from before the envelope (the meta line, a bare response item, a
    ``record_type`` marker)."""
    if not isinstance(obj, Mapping) or "session_id" in obj:
        return False
    if "payload" in obj:
        return (
            isinstance(obj.get("type"), str)
            and isinstance(obj["payload"], Mapping)
            and ("timestamp" in obj)
        )
    if "record_type" in obj:
        return len(obj) == 1
    kind = obj.get("type")
    if kind is None:  # the meta line
        return (
            isinstance(obj.get("id"), str)
            and "timestamp" in obj
            and ("instructions" in obj or "git" in obj)
        )
    return isinstance(kind, str) and kind in _BARE_ITEMS and (kind != "message" or "role" in obj)


def is_codex_document(obj: Any) -> bool:
    """A rollout of the TypeScript Codex CLI (spring 2025): one JSON document
    ``{"session": {"id", "timestamp", "instructions"}, "items": [response items]}``."""
    return (
        isinstance(obj, Mapping)
        and isinstance(obj.get("session"), Mapping)
        and isinstance(obj.get("items"), list)
        and isinstance(obj["session"].get("id"), str)
    )


def document_lines(obj: Mapping[str, Any], where: str) -> list[tuple[str, Mapping[str, Any]]]:
    """A TypeScript CLI's rollout document as the lines of a rollout from before the
    envelope: its ``session`` the meta line, then its items (items that are not objects
    are given as they are, for the reader to reject)."""
    lines: list[tuple[str, Any]] = [(f"{where}:session", obj["session"])]
    lines += [(f"{where}:items[{i}]", item) for i, item in enumerate(obj["items"])]
    return lines


@dataclass(slots=True)
class _ModelCall:
    """One model response: its items so far, and its usage once a ``token_count`` gave it."""

    draft: Draft
    texts: list[str] = field(default_factory=list)
    counted: bool = False
    end_ts: int = 0
    counted_by: tuple[str, int | None, int | None] | None = None
    """The kind of line that counted it (``token_count`` or ``token_usage_record``) and
    the tokens it gave: the other kind giving the same tokens next counts the same
    response."""


@dataclass(slots=True)
class _Rollout:
    session: str | None
    """The rollout's session id, None when neither its ``session_meta`` nor its file name
    gives one (its steps then take their session from the pipeline)."""
    drafts: list[Draft] = field(default_factory=list)
    rejects: list[tuple[str, str, Mapping[str, Any]]] = field(default_factory=list)
    model: str | None = None
    workspace: dict[str, Any] = field(default_factory=dict)
    started: bool = False
    prompt: str | None = None
    calls: list[_ModelCall] = field(default_factory=list)
    open: _ModelCall | None = None
    """The response whose items are being read: none once an input item or a turn
    boundary was seen (the next output item begins another response)."""
    total: Any = None
    prompts_from_items: bool = False
    """A rollout without ``user_message`` events (before the envelope): the person's
    prompts are its user ``message`` items."""


def rollout_drafts(
    lines: Sequence[tuple[str, Mapping[str, Any]]], *, file_name: str = ""
) -> tuple[list[Draft], list[tuple[str, str, Mapping[str, Any]]]]:
    """The drafts of a rollout's ``(location, line)`` pairs and the lines that could not be
    read as ``(location, reason, line)``. The session id is ``session_meta``'s, else the
    UUID in the file name."""
    rejects = [
        (at, "a rollout line must be a JSON object", line)
        for at, line in lines
        if not isinstance(line, Mapping)
    ]
    lines = [(at, line) for at, line in lines if isinstance(line, Mapping)]
    legacy = any(_is_bare(line) for _, line in lines)
    if legacy:
        lines = _enveloped(lines)
    session = _session_id(lines, file_name)
    rollout = _Rollout(session, prompts_from_items=legacy, rejects=rejects)
    for location, line in lines:
        try:
            _read_line(rollout, location, line)
        except DecodeError as exc:
            rollout.rejects.append((location, exc.reason, line))
    for call in rollout.calls:
        text = excerpt("\n".join(call.texts)) if call.texts else None
        call.draft.step = call.draft.step.with_(text=text, end_ts=call.end_ts)
    if session is None and rollout.drafts:
        raise DecodeError("session_meta.id: no session id in the rollout or its file name")
    return rollout.drafts, rollout.rejects


def _is_bare(line: Mapping[str, Any]) -> bool:
    """A line of a rollout written before the envelope: the meta line, a bare response
    item, or a ``record_type`` marker."""
    if "payload" in line:
        return False
    return (
        "record_type" in line
        or isinstance(line.get("type"), str)
        or ("id" in line and "timestamp" in line)
    )


def _enveloped(
    lines: Sequence[tuple[str, Mapping[str, Any]]],
) -> list[tuple[str, Mapping[str, Any]]]:
    """A rollout written before the envelope, in the envelope: the meta line as
    ``session_meta``, each bare item as a ``response_item`` at the latest time seen (the
    meta's: the items carry none); ``record_type`` markers dropped (they carry nothing)."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    ts: Any = None
    for location, line in lines:
        if "payload" in line or not _is_bare(line):
            ts = line.get("timestamp", ts)
            out.append((location, line))
        elif "record_type" in line:
            continue
        elif not isinstance(line.get("type"), str):  # the meta line
            ts = line.get("timestamp")
            out.append((location, {"timestamp": ts, "type": "session_meta", "payload": line}))
        else:
            out.append((location, {"timestamp": ts, "type": "response_item", "payload": line}))
    return out


def _session_id(lines: Sequence[tuple[str, Mapping[str, Any]]], file_name: str) -> str | None:
    for _, line in lines:
        payload = line.get("payload")
        if line.get("type") == "session_meta" and isinstance(payload, Mapping):
            # ``id`` is the thread's; newer releases add ``session_id`` (the root session's,
            # the same for a thread of its own) and some write only that
            for key in ("id", "session_id"):
                value = payload.get(key)
                if isinstance(value, str) and value:
                    return value
    found = _SESSION_IN_NAME.search(file_name)
    return found.group(1).lower() if found else None


def _read_line(rollout: _Rollout, location: str, line: Mapping[str, Any]) -> None:
    kind = line.get("type")
    payload = line.get("payload")
    if not isinstance(payload, Mapping):
        raise DecodeError("payload: an object is required")
    ts = parse_ts(line.get("timestamp"))
    ref = f"{rollout.session}@{location.rsplit(':', 1)[-1]}"
    common: dict[str, Any] = {
        "step_id": "",
        "session_id": rollout.session,
        "ts": ts,
        "agent": AGENT,
        "source": SOURCE,
        "source_ref": ref,
    }

    def add(step: Step, natural: str | None = None, suffix: str = "") -> Draft:
        draft = Draft(
            step=step,
            fallback_id=ref + suffix,
            natural_key=natural,
            session_hint=rollout.session,
        )
        rollout.drafts.append(draft)
        return draft

    if kind == "session_meta":
        git = payload.get("git")
        git = git if isinstance(git, Mapping) else {}
        for key, value in (
            ("workspace", payload.get("cwd")),
            ("repository", git.get("repository_url")),
            ("commit", git.get("commit_hash")),
            ("branch", git.get("branch")),
            ("version", payload.get("cli_version")),
        ):
            if isinstance(value, str) and value:
                rollout.workspace[key] = value
        forked, source = payload.get("forked_from_id"), payload.get("source")
        if isinstance(forked, str) and not (isinstance(source, Mapping) and "subagent" in source):
            rollout.workspace[PREDECESSOR] = forked
    elif kind == "turn_context":
        if isinstance(payload.get("model"), str):
            rollout.model = payload["model"]
    elif kind == "event_msg":
        _event(rollout, payload, common, add)
    elif kind == "response_item":
        _item(rollout, payload, common, add)
    elif kind == "token_usage_record":
        _token_usage_record(rollout, payload, common, add)
    elif kind == "compacted":
        summary = payload.get("message")
        step = Step(
            kind=StepKind.COMPACTION,
            text=excerpt(summary) if isinstance(summary, str) and summary else None,
            detail={"tokens_before": None, "tokens_after": None, "inferred": False},
            **common,
        )
        add(step)
    # other line types (newer releases add some) carry no step: skipped, not dead letters


def _event(rollout: _Rollout, payload: Mapping[str, Any], common: dict[str, Any], add: Any) -> None:
    kind = payload.get("type")
    if not isinstance(kind, str):
        return  # not an event this reader knows
    if kind in _TURN_EVENTS:
        rollout.open = None
    if kind == "user_message":
        text = payload.get("message")
        if isinstance(text, str):
            _prompt(rollout, text, common, add)
    elif kind == "token_count":
        _token_count(rollout, payload, common, add)
    elif kind == "error":
        message = payload.get("message")
        text = message if isinstance(message, str) else canonical_json(message)
        add(Step(kind=StepKind.ERROR, status="error", error=excerpt(text), **common))


def _prompt(rollout: _Rollout, text: str, common: dict[str, Any], add: Any) -> None:
    """What the person typed: the session's start the first time, else the prompt of the
    next model call."""
    if not text.strip():
        return
    if rollout.started:
        rollout.prompt = text
        return
    rollout.started = True
    facts = {"subagent": False, **rollout.workspace}
    add(Step(kind=StepKind.START, text=excerpt(text), detail=facts, **common), "start")


def _typed_prompt(rollout: _Rollout, text: str, common: dict[str, Any], add: Any) -> None:
    """A user ``message`` item of a rollout without ``user_message`` events: the person's
    prompt, unless Codex wrote it (the project's instructions are the start's rules)."""
    stripped = text.lstrip()
    if not stripped.startswith(_INJECTED):
        _prompt(rollout, text, common, add)
    elif not rollout.started and not stripped.startswith("<environment_context>"):
        rollout.workspace.setdefault("system_instructions", excerpt(stripped, 4096))


def _token_count(
    rollout: _Rollout, payload: Mapping[str, Any], common: dict[str, Any], add: Any
) -> None:
    """The usage of the latest response, if it has none yet; else a call of its own (a
    request whose response left no item, such as a compaction's)."""
    info = payload.get("info")
    if not isinstance(info, Mapping):
        return
    total, last = info.get("total_token_usage"), info.get("last_token_usage")
    if total == rollout.total or not isinstance(last, Mapping):
        return  # the same count written again (a rate-limit refresh): no new call
    rollout.total = total
    window = positive_int(info.get("model_context_window"))
    _count(rollout, "token_count", last, common, add, window=window)


def _token_usage_record(
    rollout: _Rollout, payload: Mapping[str, Any], common: dict[str, Any], add: Any
) -> None:
    """A newer release's usage of one completed response (``TokenUsageRecord``)."""
    usage = payload.get("usage")
    if not isinstance(usage, Mapping):
        return  # no usage to read: the line carries no step
    attribution = payload.get("attribution")
    model = attribution.get("model") if isinstance(attribution, Mapping) else None
    _count(rollout, "token_usage_record", usage, common, add, model=model)


def _count(
    rollout: _Rollout,
    by: str,
    usage: Mapping[str, Any],
    common: dict[str, Any],
    add: Any,
    *,
    window: int | None = None,
    model: Any = None,
) -> None:
    """Give the latest response the tokens of one counting line (``by``), if it has none
    yet; else those tokens are a call of their own (a request whose response left no item,
    such as a compaction's) — unless the latest was counted by the other kind of line with
    the same tokens: the same response, counted twice."""
    # input_tokens counts the cached ones; output_tokens the reasoning ones (Codex's
    # TokenUsage: total_tokens = input_tokens + output_tokens)
    tokens_in = positive_int(usage.get("input_tokens")) or None
    tokens_out = positive_int(usage.get("output_tokens")) or None
    latest = rollout.calls[-1] if rollout.calls else None
    if (
        latest is not None
        and rollout.open is None
        and latest.counted_by is not None
        and latest.counted_by[0] != by
        and latest.counted_by[1:] == (tokens_in, tokens_out)
    ):
        if window:  # what only a token_count says: the context window
            step = latest.draft.step
            latest.draft.step = step.with_(detail={**step.detail, "context_window": window})
        return
    if latest is None or latest.counted:
        latest = _model_call(rollout, common, add)
    step = latest.draft.step
    detail = {**step.detail, "context_window": window} if window else step.detail
    fields: dict[str, Any] = {"tokens_in": tokens_in, "tokens_out": tokens_out}
    if isinstance(model, str) and model:
        fields["model"] = model
    # a counted call is identified by its counting line, as it was before model calls
    # came from the response items: replaying an older store again adds no twin
    ref = common["source_ref"]
    latest.draft.step = step.with_(detail=detail, source_ref=ref, **fields)
    latest.draft.fallback_id = ref
    latest.counted, latest.end_ts = True, common["ts"]
    latest.counted_by = (by, tokens_in, tokens_out)
    rollout.open = None  # the count closes its response: a later item begins the next


def _model_call(rollout: _Rollout, common: dict[str, Any], add: Any) -> _ModelCall:
    detail: dict[str, Any] = {}
    if rollout.prompt:
        detail["user_message"] = excerpt(rollout.prompt, 4096)
        rollout.prompt = None
    step = Step(kind=StepKind.MODEL_CALL, model=rollout.model, status="ok", detail=detail, **common)
    call = _ModelCall(add(step, None, ":model"), end_ts=common["ts"])
    rollout.calls.append(call)
    return call


def _respond(rollout: _Rollout, common: dict[str, Any], add: Any) -> _ModelCall:
    """The model call an output item belongs to: the open response's, else a new one,
    placed before its first item and at that item's time."""
    call = rollout.open
    if call is None:
        call = rollout.open = _model_call(rollout, common, add)
    if not call.counted:
        call.end_ts = max(call.end_ts, common["ts"])
    return call


def _item(rollout: _Rollout, payload: Mapping[str, Any], common: dict[str, Any], add: Any) -> None:
    kind = payload.get("type")
    if not isinstance(kind, str):
        return  # not an item this reader knows
    if kind == "message":
        if payload.get("role") == "assistant":
            _respond(rollout, common, add).texts.extend(_texts(payload.get("content")))
        else:  # user, developer, system: input of the next request
            rollout.open = None
            if payload.get("role") == "user" and rollout.prompts_from_items:
                _typed_prompt(rollout, "\n".join(_texts(payload.get("content"))), common, add)
            elif payload.get("role") == "user" and not rollout.started:
                # Codex sends the project's AGENTS.md as the first user input item,
                # "# AGENTS.md instructions for <cwd>" then <INSTRUCTIONS>…</INSTRUCTIONS>:
                # the rules the session runs under (features.policy.instructions)
                given = "\n".join(_texts(payload.get("content")))
                if given.startswith(_AGENTS_MD_HEADER):
                    rollout.workspace["system_instructions"] = excerpt(given, 4096)
    elif kind == "reasoning":
        _respond(rollout, common, add)
    elif kind in _CALL_ITEMS:
        _respond(rollout, common, add)
        name, arguments, call_id = _call(kind, payload)
        step = Step(
            kind=StepKind.TOOL_CALL, call_id=call_id, **tool_call_fields(name, arguments), **common
        )
        add(step, f"tool_call/{call_id}" if call_id else None)
    elif kind in _OUTPUT_ITEMS:
        rollout.open = None
        call_id = payload.get("call_id")
        if kind == "tool_search_output":
            call_id = call_id if isinstance(call_id, str) and call_id else None
            text, failed = _tool_names(payload.get("tools")), False
        elif not isinstance(call_id, str) or not call_id:
            raise DecodeError(f"{kind}.call_id: a non-empty string is required")
        else:
            text, failed = _output(payload.get("output"))
        cancelled = text is not None and _ABORTED.fullmatch(text.strip()) is not None
        fields = tool_result_fields(text, failed=failed, cancelled=cancelled)
        step = Step(kind=StepKind.TOOL_RESULT, call_id=call_id, **fields, **common)
        add(step, f"tool_result/{call_id}" if call_id else None)
    # ghost snapshots, compaction items (the ``compacted`` line is the compaction),
    # inter-agent messages, tool lists and unknown items: no step


def _call(kind: str, payload: Mapping[str, Any]) -> tuple[str, Any, str | None]:
    """(tool name, arguments, call id) of a tool-call response item."""
    call_id = payload.get("call_id")
    if kind == "local_shell_call":
        action = payload.get("action")
        action = action if isinstance(action, Mapping) else {}
        name = "local_shell"
        arguments: Any = {
            "command": action.get("command"),
            "workdir": action.get("working_directory"),
        }
    elif kind == "web_search_call":  # run by the API: no output item follows
        name, arguments, call_id = "web_search", payload.get("action"), payload.get("id")
    elif kind == "image_generation_call":  # likewise; its result is the image itself
        name, call_id = "image_generation", payload.get("id")
        arguments = {"revised_prompt": payload.get("revised_prompt")}
    elif kind == "tool_search_call":
        name, arguments = "tool_search", payload.get("arguments")
    else:
        named = payload.get("name")
        if not isinstance(named, str) or not named:
            raise DecodeError(f"{kind}.name: a non-empty string is required")
        name = named
        raw = payload.get("arguments" if kind == "function_call" else "input")
        arguments = json_value(raw) if kind == "function_call" else {"input": raw}
    return name, arguments, call_id if isinstance(call_id, str) and call_id else None


def _tool_names(tools: Any) -> str | None:
    """A tool search's output: the names of the tools it found."""
    if not isinstance(tools, list):
        return None
    names = [t.get("name") for t in tools if isinstance(t, Mapping)]
    return ", ".join(n for n in names if isinstance(n, str)) or canonical_json(tools)


def _output(value: Any) -> tuple[str | None, bool]:
    """(text, failed) of a tool's output: a shell's JSON ``{"output", "metadata":
    {"exit_code"}}`` or freeform text with an ``Exit code: N`` header, or plain text."""
    if isinstance(value, Mapping):  # {content, success}
        content = value.get("content")
        text = content if isinstance(content, str) else canonical_json(content)
        return text, value.get("success") is False
    if isinstance(value, list):  # content items: input_text, input_image (a data URL)
        parts = [
            "[image]" if isinstance(c, Mapping) and c.get("type") == "input_image" else text
            for c in value
            for text in (_texts([c]) or [canonical_json(c)])
        ]
        return "\n".join(parts), False
    if not isinstance(value, str):
        return None, False
    parsed = json_value(value)
    if isinstance(parsed, Mapping) and isinstance(parsed.get("metadata"), Mapping):
        code = parsed["metadata"].get("exit_code")
        output = parsed.get("output")
        text = output if isinstance(output, str) else value
        return text, isinstance(code, int) and code != 0
    header, said, output = value[:300].partition("\nOutput:")
    found = _EXIT_RE.search(header)
    failed = bool(found and int(found.group(1)) != 0)
    # a command still running (``Process running with session ID``, no exit line) says
    # nothing yet but its envelope: left whole
    if not said or found is None or not _ENVELOPE_RE.fullmatch(header):
        return value, failed
    return _command_output(found, value[len(header) + len(said) :]), failed


def _command_output(exit_line: re.Match[str], output: str) -> str:
    """What a finished shell command said, without the envelope Codex wraps it in: its
    output, preceded by its exit line when it failed (``Process exited with code 2``: how
    it failed, and all a silent failure says). The envelope's chunk id, wall time and
    token count change on every call and its ``Process exited with code 0`` is the same
    on every success, so with them a command's first line never said what the command
    printed: a training log advancing (``[step 9273/19707]`` → ``[step 9660/19707]``)
    read as the same answer each poll (the JSON form ``{"output", "metadata"}`` already
    gives the output alone).

    >>> _command_output(_EXIT_RE.search("Process exited with code 0"), "\\n[step 96/197] loss 2")
    '[step 96/197] loss 2'
    >>> _command_output(_EXIT_RE.search("Process exited with code 2"), "\\nNo such file")
    'Process exited with code 2\\nNo such file'
    """
    output = output.removeprefix("\n")
    if exit_line.group(1) == "0":
        return output
    return f"{exit_line.group(0)}\n{output}" if output else exit_line.group(0)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [c["text"] for c in content if isinstance(c, Mapping) and isinstance(c.get("text"), str)]
