"""Claude Code session transcripts → step drafts.

Claude Code keeps each session as JSON lines in
``~/.claude/projects/<project>/<session id>.jsonl`` (sub-agents in
``<session id>/subagents/agent-<id>.jsonl``, or ``agent-<id>.jsonl`` beside it in older
versions). The format is the tool's own and changes between releases; this reads the
parts that have stayed (field names from the transcripts of 2.0-2.1 releases and the
parsers that read them):

- every line: ``type``, ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp`` (RFC 3339),
  ``cwd``, ``gitBranch``, ``version``; sub-agent lines ``isSidechain: true`` and, from 2.0,
  ``agentId`` (the sub-agent has a context window of its own). Claude Code 1.0 wrote its
  sub-agents *inline*, in the main file and without ``agentId``: there each sub-agent is
  the tree of sidechain lines under one root (the sidechain user message, ``parentUuid``
  null, that carries the prompt of the ``Task`` call which started it); the call whose
  ``input.prompt`` is that message gives the sub-agent's description and type;
- ``assistant`` lines hold one content block each of an API response (``message.id``
  shared, ``usage`` repeated as a running snapshot): the lines of one ``message.id``
  are **one** ``model_call`` (its largest usage counts; input tokens are the whole prompt:
  ``input_tokens`` + ``cache_creation_input_tokens`` + ``cache_read_input_tokens``), each
  ``tool_use`` block a ``tool_call`` (its ``id`` is the call id), as is a
  ``server_tool_use`` / ``mcp_tool_use`` block, whose ``…_tool_result`` block in the same
  response is its ``tool_result``; ``isApiErrorMessage`` lines are ``error`` steps;
- ``user`` lines: the first typed prompt of the main chain is the session's ``start``
  (its goal; ``cwd`` is the workspace; ``forkedFrom.sessionId``, on the lines a forked or
  resumed-into-a-new-file session copied from the one it continues, its predecessor:
  :mod:`features.session.lineage`), a sub-agent's first prompt its own ``start``;
  later prompts ride on the next model call (``detail.user_message``); a slash command,
  stored as ``<command-name>``/``<command-args>`` markup, is the prompt ``/name args``;
  ``tool_result`` blocks are ``tool_result`` steps (an image or document in one is a
  placeholder naming its media type, not its bytes; ``is_error`` → failed; the error
  Claude Code gives the calls of a parallel batch it cancelled because a sibling failed,
  ``<tool_use_error>Sibling tool call errored</tool_use_error>`` or, from 2.1.15x,
  ``Cancelled: parallel tool call … errored``, → ``cancelled``); ``isMeta`` lines (text
  the tool injected, such as a command's expanded body) and interrupts are skipped;
- ``system`` lines: ``compact_boundary`` is an explicit ``compaction`` (``compactMetadata``
  ``preTokens``/``postTokens``/``trigger``; the summary from the ``isCompactSummary`` user
  line that follows), ``api_error`` an ``error``. A ``microcompact_boundary`` (old tool
  outputs cleared, the conversation kept) is not a compaction.
- ``progress`` lines (2.1) of ``data.type`` ``agent_progress`` carry a sub-agent's
  messages as they happen (``data.agentId``, ``data.message``: the sub-agent's own line,
  with its ``uuid``): each is read as that sub-agent's line, so a transcript whose
  ``subagents/agent-<id>.jsonl`` files are missing still has the sub-agent's start, model
  calls and tool calls, in its own context window; read beside those files, every step
  has the same id as the file's and is stored once. Other progress (a shell's output, a
  hook's, an MCP server's) carries no step;
- other lines (``summary`` titles, ``file-history-snapshot``, hooks, ``attachment``, …)
  carry no step.

A headless run's ``claude -p --output-format stream-json`` capture (the Agent SDK's
messages: snake-case ``session_id``, no times, a closing ``result``) is read as the same
transcript by :func:`stream_drafts`.

A transcript has no delivery order of its own that a replay could follow, so a file is
delivered whole (like a TRAIL trace) and its steps are put in event-time order; a line
that cannot be read is a dead letter with the reason, the rest of the file is kept.
Pure: no I/O.
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
from ingest.decoded import Draft, compaction_key
from ingest.formats.session_events import parse_ts
from ingest.semconv.attributes import positive_int
from models.errors import DecodeError
from models.records import Step, StepKind

__all__ = [
    "AGENT",
    "SOURCE",
    "is_claude_code_line",
    "is_claude_stream_line",
    "stream_drafts",
    "transcript_drafts",
]

SOURCE = "claude_code"
AGENT = "claude-code"
_CONVERSATION = frozenset({"user", "assistant", "system", "result"})
_STREAM_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event"})
"""Line types of ``claude -p --output-format stream-json`` (the Agent SDK's messages)."""
_CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
"""Content blocks that call a tool: Claude Code's own tools (``tool_use``), tools the API
runs (``server_tool_use``: web search, web fetch, code execution; their
``…_tool_result`` block follows in the same response) and MCP connector tools."""
_INTERRUPTED = "[Request interrupted by user"
_COMMAND_TAG = re.compile(r"<command-(name|args)>(.*?)</command-\1>", re.DOTALL)
_TOOL_USE_ERROR = re.compile(r"\s*<tool_use_error>(.*?)</tool_use_error>\s*", re.DOTALL)
_CANCELLED = (
    "Sibling tool call errored",  # 1.0-2.1.14x
    "Cancelled: parallel tool call",  # 2.1.15x: "Cancelled: parallel tool call Bash(…) errored"
    "Streaming fallback - tool execution discarded",  # the model fell back mid-response
)
"""How Claude Code's tool executor words the ``<tool_use_error>`` of a call it did not run
(or stopped): a sibling in the same parallel batch failed, or the response was dropped."""


def is_claude_code_line(obj: Any) -> bool:
    """A line of a Claude Code transcript (and not a trajwatch session event, whose
    ``session_id`` is spelled in snake case)."""
    if not isinstance(obj, Mapping) or "session_id" in obj:
        return False
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "summary":
        return "leafUuid" in obj
    # conversation lines, and any line type of a newer release with the session's id;
    # Claude Code names its bookkeeping records in kebab case (file-history-snapshot,
    # worktree-state, speculation-accept, …), some written without the session's id
    return "sessionId" in obj or "-" in kind


def is_claude_stream_line(obj: Any) -> bool:
    """A line of ``claude -p --output-format stream-json``: the Agent SDK's messages, with
    a snake-case ``session_id`` and no time (no trajwatch session event has these types)."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("session_id"), str):
        return False
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    if kind in ("assistant", "user"):
        return isinstance(obj.get("message"), Mapping)
    if kind == "stream_event":
        return "event" in obj
    return kind in _STREAM_TYPES and isinstance(obj.get("subtype"), str)


def stream_drafts(
    lines: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[list[Draft], list[tuple[str, str, Mapping[str, Any]]]]:
    """The drafts of a ``stream-json`` capture, read as the transcript it streams.

    Its lines carry no time: line *i* is placed *i* ms after the Unix epoch, which keeps
    their order (durations are unknown). The ``init`` line gives the workspace and the
    version; a message whose ``parent_tool_use_id`` is set is the sub-agent that call
    started (its own context); ``result`` ends the session (``is_error``, the final
    text, ``total_cost_usd``); ``stream_event`` partial deltas repeat the messages and
    carry no step."""
    envelope: dict[str, Any] = {}
    transcript: list[tuple[str, Mapping[str, Any]]] = []
    for index, (location, line) in enumerate(lines):
        kind = line.get("type")
        if kind == "system" and line.get("subtype") == "init":
            for key, name in (("cwd", "cwd"), ("claude_code_version", "version")):
                if isinstance(line.get(key), str):
                    envelope[name] = line[key]
            continue
        if kind == "stream_event":
            continue
        converted = {
            **envelope,
            **line,
            "sessionId": line.get("session_id"),
            "uuid": line.get("uuid") or f"stream-{index}",
            "timestamp": index / 1000,
        }
        parent = line.get("parent_tool_use_id")
        if isinstance(parent, str) and parent:
            converted.update(isSidechain=True, agentId=parent)
        if kind == "system" and "compact_metadata" in line:  # the SDK's snake case
            meta = line["compact_metadata"]
            if isinstance(meta, Mapping):
                converted["compactMetadata"] = {
                    "trigger": meta.get("trigger"),
                    "preTokens": meta.get("pre_tokens"),
                    "postTokens": meta.get("post_tokens"),
                }
        transcript.append((location, converted))
    return transcript_drafts(transcript)


@dataclass(slots=True)
class _ModelCall:
    """The lines of one API response, gathered into one model call."""

    draft: Draft
    tokens_in: int = 0
    tokens_out: int = 0
    texts: list[str] = field(default_factory=list)
    finish: str | None = None
    last_ts: int = 0


@dataclass(slots=True)
class _Reader:
    drafts: list[Draft] = field(default_factory=list)
    rejects: list[tuple[str, str, Mapping[str, Any]]] = field(default_factory=list)
    calls: dict[str, _ModelCall] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)
    """The contexts (``main`` or a sub-agent id) whose first prompt was seen."""
    prompt: dict[str, str] = field(default_factory=dict)
    """A context's latest typed prompt, for its next model call."""
    compaction: Draft | None = None
    inline: _Inline = field(default_factory=lambda: _Inline({}, {}))


@dataclass(frozen=True, slots=True)
class _Inline:
    """Claude Code 1.0's inline sub-agents: each sidechain line's sub-agent (the uuid of
    its root), and what the ``Task`` call that started a sub-agent says of it."""

    agent_of: Mapping[str, str]
    task_of: Mapping[str, Mapping[str, str]]


def transcript_drafts(
    lines: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[list[Draft], list[tuple[str, str, Mapping[str, Any]]]]:
    """The drafts of a transcript's ``(location, line)`` pairs, in file order, and the
    lines that could not be read as ``(location, reason, line)``."""
    reader = _Reader(inline=_inline_subagents(lines))
    if not any(_has_session(line) for _, line in lines):
        # Only the kebab-case claim took these lines (no line names a session): another
        # tool's records (the Vercel AI SDK's stream parts are `text-delta`, `tool-call`,
        # ...), not a transcript whose bookkeeping they would be; unread, not dropped.
        lines, foreign = _split_unclaimed(lines)
        reader.rejects += [(at, _NOT_A_TRANSCRIPT, line) for at, line in foreign]
    for location, line in lines:
        try:
            _read_line(reader, location, line)
        except DecodeError as exc:
            reader.rejects.append((location, exc.reason, line))
    for call in reader.calls.values():
        step = call.draft.step.with_(
            tokens_in=call.tokens_in or None,
            tokens_out=call.tokens_out or None,
            text=excerpt("\n".join(call.texts)) if call.texts else None,
            finish_reason=call.finish,
            end_ts=call.last_ts,
        )
        call.draft.step = step
    return reader.drafts, reader.rejects


_NOT_A_TRANSCRIPT = (
    "a record with a kebab-case type but no Claude Code sessionId in its file: not a Claude "
    "Code transcript line, and no other format reads it"
)


def _has_session(line: Mapping[str, Any]) -> bool:
    session = line.get("sessionId")
    return isinstance(session, str) and bool(session)


def _split_unclaimed(
    lines: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[list[tuple[str, Mapping[str, Any]]], list[tuple[str, Mapping[str, Any]]]]:
    """``lines`` of a file where no line names a session, split into the records that are
    Claude Code's by their own shape (a ``summary`` with its ``leafUuid``, a
    ``file-history-snapshot`` with its ``snapshot``) and the rest."""
    kept: list[tuple[str, Mapping[str, Any]]] = []
    foreign: list[tuple[str, Mapping[str, Any]]] = []
    for at, line in lines:
        kind = line.get("type")
        own = (kind == "summary" and "leafUuid" in line) or (
            kind == "file-history-snapshot" and "snapshot" in line
        )
        (kept if own else foreign).append((at, line))
    return kept, foreign


def _read_line(reader: _Reader, location: str, line: Mapping[str, Any]) -> None:
    kind = line.get("type")
    if kind == "progress":
        nested = _agent_progress(line)
        if nested is None:
            return  # a shell's, a hook's or an MCP server's progress: no step
        prompt = line["data"].get("prompt")
        if (
            nested["agentId"] not in reader.started
            and isinstance(prompt, str)
            and prompt
            and not _is_prompt(nested)
        ):  # the first message reported is not the sub-agent's prompt: the prompt starts it
            typed = {"role": "user", "content": prompt}
            first = {**nested, "type": "user", "message": typed, "uuid": f"{nested['uuid']}:0"}
            _read_line(reader, location, first)
        line, kind = nested, nested["type"]
    if not isinstance(kind, str) or kind not in _CONVERSATION:
        return  # titles, snapshots, hooks: no step
    if not _has_session(line):
        raise DecodeError("sessionId: a non-empty string is required")
    session: str = line["sessionId"]
    uuid = line.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise DecodeError("uuid: a non-empty string is required")
    ts = parse_ts(line.get("timestamp"))
    context = "main"
    if line.get("isSidechain"):
        agent = line.get("agentId")
        context = str(agent) if agent else reader.inline.agent_of.get(uuid, "sidechain")
    ref = f"{session}@{uuid}"
    common: dict[str, Any] = {
        "step_id": "",
        "session_id": session,
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
            session_hint=session,
            context=context,
        )
        reader.drafts.append(draft)
        return draft

    message = line.get("message")
    if kind == "assistant":
        if not isinstance(message, Mapping):
            raise DecodeError("message: an object is required on an assistant line")
        _assistant(reader, line, message, common, context, add)
    elif kind == "user":
        if not isinstance(message, Mapping):
            raise DecodeError("message: an object is required on a user line")
        _user(reader, line, message, common, context, add)
    elif kind == "result":
        _result(line, common, add)
    else:
        _system(reader, line, common, add)


def _assistant(
    reader: _Reader,
    line: Mapping[str, Any],
    message: Mapping[str, Any],
    common: dict[str, Any],
    context: str,
    add: Any,
) -> None:
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    if line.get("isApiErrorMessage"):
        text = "\n".join(_block_texts(blocks)) or str(line.get("error") or "API error")
        status = {"code": line.get("error"), "http_status": line.get("apiErrorStatus")}
        add(Step(kind=StepKind.ERROR, status="error", error=excerpt(text), detail=status, **common))
        return
    message_id = message.get("id")
    identified = isinstance(message_id, str) and bool(message_id)
    key = str(message_id) if identified else str(common["source_ref"])
    call = reader.calls.get(key)
    if call is None:
        detail: dict[str, Any] = {}
        prompt = reader.prompt.pop(context, None)
        if prompt:
            detail["user_message"] = excerpt(prompt, 4096)
        step = Step(
            kind=StepKind.MODEL_CALL,
            model=message.get("model") if isinstance(message.get("model"), str) else None,
            status="ok",
            detail=detail,
            **common,
        )
        natural = f"model_call/{message_id}" if identified else None
        call = reader.calls[key] = _ModelCall(add(step, natural, ":model"))
    call.last_ts = common["ts"]
    usage = message.get("usage")
    if isinstance(usage, Mapping):
        prompt_tokens = sum(
            positive_int(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        call.tokens_in = max(call.tokens_in, prompt_tokens)
        call.tokens_out = max(call.tokens_out, positive_int(usage.get("output_tokens")))
    stop = message.get("stop_reason")
    if isinstance(stop, str) and stop:
        call.finish = stop
    for index, block in enumerate(blocks):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            call.texts.append(block["text"])
        elif kind in _CALL_BLOCKS:
            call_id = block.get("id")
            name = block.get("name")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
                raise DecodeError("tool_use: a block needs a string id and name")
            fields = tool_call_fields(name, block.get("input"))
            step = Step(kind=StepKind.TOOL_CALL, call_id=call_id, end_ts=None, **fields, **common)
            add(step, f"tool_call/{call_id}", f":{index}")
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            _tool_result(block, common, add, index)  # a server tool's, in the same response


def _user(
    reader: _Reader,
    line: Mapping[str, Any],
    message: Mapping[str, Any],
    common: dict[str, Any],
    context: str,
    add: Any,
) -> None:
    content = message.get("content")
    if line.get("isCompactSummary"):
        summary = "\n".join(_block_texts(content)) if isinstance(content, list) else content
        if reader.compaction is not None and isinstance(summary, str) and summary:
            reader.compaction.step = reader.compaction.step.with_(text=excerpt(summary))
        return
    if isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    ):
        for index, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                _tool_result(block, common, add, index)
        return
    if line.get("isMeta"):
        return  # text the tool injected (skill bodies, caveats), not typed by a person
    text = _typed(content if isinstance(content, str) else "\n".join(_block_texts(content)))
    if not text or text.startswith(_INTERRUPTED):
        return
    if context in reader.started:
        reader.prompt[context] = text
        return
    reader.started.add(context)
    main = context == "main"
    detail: dict[str, Any] = {"subagent": not main}
    if main:
        for key, name in (("cwd", "workspace"), ("gitBranch", "branch"), ("version", "version")):
            value = line.get(key)
            if isinstance(value, str) and value:
                detail[name] = value
        forked = line.get("forkedFrom")
        if isinstance(forked, Mapping) and isinstance(forked.get("sessionId"), str):
            detail[PREDECESSOR] = forked["sessionId"]
    else:
        detail["agent_id"] = context
        detail.update(reader.inline.task_of.get(context, {}))
    add(
        Step(kind=StepKind.START, text=excerpt(text), detail=detail, **common),
        "start" if main else None,
        ":start",
    )


def _tool_result(block: Mapping[str, Any], common: dict[str, Any], add: Any, index: int) -> None:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise DecodeError("tool_result: tool_use_id must be a non-empty string")
    content = block.get("content")
    text: str | None
    if isinstance(content, list):
        text = "\n".join(_result_parts(content))
    elif isinstance(content, Mapping):  # a server tool's error: {"type": "…_error", "error_code"}
        text = canonical_json(content)
    else:
        text = content if isinstance(content, str) else None
    failed = block.get("is_error") is True or (
        isinstance(content, Mapping) and str(content.get("type", "")).endswith("_error")
    )
    fields = tool_result_fields(text, failed=failed, cancelled=failed and _cancelled(text))
    step = Step(kind=StepKind.TOOL_RESULT, call_id=call_id, **fields, **common)
    add(step, f"tool_result/{call_id}", f":{index}")


def _result(line: Mapping[str, Any], common: dict[str, Any], add: Any) -> None:
    """A headless run's ``result`` line: the end of the session."""
    failed = line.get("is_error") is True or line.get("subtype") not in (None, "success")
    text = line.get("result")
    detail: dict[str, Any] = {"end_status": str(line.get("subtype") or "")}
    for key in ("num_turns", "total_cost_usd", "duration_ms"):
        value = line.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            detail[key] = value
    step = Step(
        kind=StepKind.END,
        status="error" if failed else "ok",
        text=excerpt(text) if isinstance(text, str) and text else None,
        detail=detail,
        **common,
    )
    add(step, "end")


def _system(reader: _Reader, line: Mapping[str, Any], common: dict[str, Any], add: Any) -> None:
    subtype = line.get("subtype")
    if subtype == "compact_boundary":
        meta = line.get("compactMetadata")
        meta = meta if isinstance(meta, Mapping) else {}
        before = positive_int(meta.get("preTokens")) or None
        after = positive_int(meta.get("postTokens")) or None
        step = Step(
            kind=StepKind.COMPACTION,
            detail={
                "tokens_before": before,
                "tokens_after": after,
                "inferred": False,
                "trigger": meta.get("trigger"),
            },
            **common,
        )
        reader.compaction = add(step, compaction_key(before, after))
    elif subtype == "api_error":
        error = line.get("error")
        text = error if isinstance(error, str) else canonical_json(error)
        detail = {"retry_attempt": line.get("retryAttempt"), "max_retries": line.get("maxRetries")}
        add(Step(kind=StepKind.ERROR, status="error", error=excerpt(text), detail=detail, **common))


def _agent_progress(line: Mapping[str, Any]) -> dict[str, Any] | None:
    """A 2.1 ``progress`` line's sub-agent message as the sub-agent's own transcript line,
    None when the line reports no sub-agent message.

    ``data`` is ``{"type": "agent_progress", "agentId", "prompt", "message": {"type":
    "user"|"assistant", "message", "uuid", "timestamp", ...}}``: the line the sub-agent
    file ``agent-<agentId>.jsonl`` holds with the same ``uuid``, so a step read from both
    has one id (its tool calls and model calls are keyed by their own ids anyway)."""
    data = line.get("data")
    if not isinstance(data, Mapping) or data.get("type") != "agent_progress":
        return None
    message = data.get("message")
    if not isinstance(message, Mapping) or message.get("type") not in ("user", "assistant"):
        return None
    agent = data.get("agentId")
    nested = {**message, "sessionId": line.get("sessionId"), "isSidechain": True}
    for key in ("uuid", "timestamp"):
        if nested.get(key) in (None, ""):
            nested[key] = line.get(key)
    nested["agentId"] = agent if isinstance(agent, str) and agent else "sidechain"
    return nested


def _is_prompt(line: Mapping[str, Any]) -> bool:
    """Whether a user line is typed text (not tool results)."""
    message = line.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if line.get("type") != "user":
        return False
    return not isinstance(content, list) or not any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    )


def _result_parts(blocks: list[Any]) -> list[str]:
    """A tool result's content blocks as text: a text block's text, an image or a
    document as a placeholder naming its media type (not its base64 bytes: a screenshot
    is megabytes of no meaning to an analysis), a search hit as its title and URL, any
    other block as its JSON."""
    parts = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind in ("image", "document") and isinstance(block, Mapping):
            source = block.get("source")
            media = source.get("media_type") if isinstance(source, Mapping) else None
            parts.append(f"[{kind} {media}]" if isinstance(media, str) else f"[{kind}]")
        elif isinstance(block, Mapping) and isinstance(block.get("url"), str):
            title = block.get("title")
            parts.append(f"{title} {block['url']}" if isinstance(title, str) else block["url"])
        else:
            parts.append(canonical_json(block))
    return parts


def _block_texts(blocks: Any) -> list[str]:
    if not isinstance(blocks, list):
        return []
    return [
        b["text"]
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _cancelled(text: str | None) -> bool:
    """Whether a failed call's result is Claude Code's word that it did not run it."""
    found = _TOOL_USE_ERROR.fullmatch(text or "")
    return found is not None and found.group(1).strip().startswith(_CANCELLED)


def _typed(text: str) -> str:
    """A prompt as the person typed it: a slash command, which Claude Code stores as
    ``<command-message>``/``<command-name>``/``<command-args>`` markup, as ``/name args``.

    >>> _typed("<command-message>review is running…</command-message>\\n"
    ...        "<command-name>/review</command-name>\\n<command-args>src/app.py</command-args>")
    '/review src/app.py'
    """
    if "<command-name>" not in text:
        return text
    tags = dict(_COMMAND_TAG.findall(text))
    name = tags.get("name", "").strip()
    if not name:
        return text
    command = name if name.startswith("/") else f"/{name}"
    arguments = tags.get("args", "").strip()
    return f"{command} {arguments}" if arguments else command


def _inline_subagents(lines: Sequence[tuple[str, Mapping[str, Any]]]) -> _Inline:
    """Group the sidechain lines that carry no ``agentId`` by the root of their
    ``parentUuid`` chain (the topmost sidechain ancestor), and link each root to the tool
    call whose ``input.prompt`` it carries. Linear in the lines; cycles are cut."""
    parent: dict[str, str | None] = {}
    prompts: dict[str, str] = {}
    calls: dict[str, list[dict[str, str]]] = {}
    for _, line in lines:
        message = line.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        uuid = line.get("uuid")
        if line.get("isSidechain") and not line.get("agentId") and isinstance(uuid, str):
            up = line.get("parentUuid")
            parent[uuid] = up if isinstance(up, str) else None
            if line.get("type") == "user":
                text = content if isinstance(content, str) else "\n".join(_block_texts(content))
                if text:
                    prompts[uuid] = text
        if line.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                task = _task_call(block)
                if task is not None:
                    calls.setdefault(task.pop("prompt"), []).append(task)
    agent_of = _roots(parent)
    task_of: dict[str, Mapping[str, str]] = {}
    for root in dict.fromkeys(agent_of.values()):
        waiting = calls.get(prompts.get(root, ""))
        if waiting:
            task_of[root] = waiting.pop(0)
    return _Inline(agent_of, task_of)


def _task_call(block: Any) -> dict[str, str] | None:
    """What a tool call that hands a sub-agent its prompt says of it."""
    if not isinstance(block, Mapping) or block.get("type") != "tool_use":
        return None
    arguments = block.get("input")
    if not isinstance(arguments, Mapping) or not isinstance(arguments.get("prompt"), str):
        return None
    task = {"prompt": arguments["prompt"]}
    for key, value in (
        ("task_call_id", block.get("id")),
        ("description", arguments.get("description")),
        ("subagent_type", arguments.get("subagent_type")),
    ):
        if isinstance(value, str) and value:
            task[key] = value
    return task


def _roots(parent: Mapping[str, str | None]) -> dict[str, str]:
    """Each node's root: the first ancestor whose parent is not a node (or closes a cycle).
    Every node is walked once; later walks stop at a node already rooted."""
    root: dict[str, str] = {}
    for start in parent:
        path: list[str] = []
        seen: set[str] = set()
        node = start
        while node not in root:
            path.append(node)
            seen.add(node)
            up = parent[node]
            if up is None or up not in parent or up in seen:
                root[node] = node
                break
            node = up
        top = root[node]
        for visited in path:
            root[visited] = top
    return root
