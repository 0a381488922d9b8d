"""Spans → step drafts, by the OpenTelemetry GenAI conventions and OpenInference.

What a span means is read from, in order: ``gen_ai.operation.name`` (current
GenAI conventions), ``openinference.span.kind`` (OpenInference), the span kind
plus HTTP/MCP attributes (egress), and the span name's GenAI prefix (``chat``,
``execute_tool``, ``invoke_agent``) for instrumentations that set little else.
Spans of instrumentations with a dialect of their own (OpenLLMetry, LangSmith, the
Vercel AI SDK, pydantic-ai's early spans, Google ADK, Claude Code) are first restated in
the GenAI conventions by :mod:`ingest.semconv.dialects`. Deprecated attribute names still
sent by older
instrumentations are read beside the current ones (``gen_ai.system``,
``gen_ai.usage.prompt_tokens``, ``http.url``, ``net.peer.name``, …). Attribute values
may be JSON strings or structured OTLP arrays/kvlists; both are accepted.

Mapping:

============================================  ====================================
span                                          steps
============================================  ====================================
``chat`` / ``text_completion`` /              ``model_call`` at span start
``generate_content``, OpenInference ``LLM``
``execute_tool``, OpenInference ``TOOL``      ``tool_call`` at start, ``tool_result`` at end
``invoke_agent``, OpenInference ``AGENT``     ``start`` (goal from the input, workspace facts
                                              from :mod:`ingest.semconv.workspace`) at start;
                                              ``end`` at end for the outermost agent of a batch
                                              (or the agent an outermost workflow wraps)
HTTP or MCP ``CLIENT`` span                   ``egress`` at start, linked to its tool call
span event ``trajwatch.compaction``           ``compaction`` at the event's time
smolagents ``Step N`` CHAIN span              the code actions no span records
                                              (:mod:`ingest.semconv.codeact`)
OpenHands CodeAct tags in a model output      its action, observed in the next call
a compaction span (``compact`` operation,     ``compaction`` at end (tokens from
``compact_messages``, or any other span       ``compaction.tokens_before``/``_after``)
marked ``gen_ai.conversation.compacted``)
inference span marked                         ``model_call`` with ``detail.compacted`` /
``gen_ai.conversation.compacted``, or with a  ``detail.compaction_part``; the pipeline puts
``compaction`` message part                   an explicit ``compaction`` before the first
                                              such call (and before each new part)
any other span with status ERROR              ``error`` at end (a failed code
                                              action carries its step's failure)
============================================  ====================================

The explicit compaction marker is the span event ``trajwatch.compaction`` with
optional attributes ``trajwatch.compaction.tokens_before``,
``trajwatch.compaction.tokens_after`` and ``trajwatch.compaction.summary``
(kept for instrumentations that predate the GenAI conventions' compaction signals:
``gen_ai.conversation.compacted`` and the ``compaction`` message part, PR #162 of
open-telemetry/semantic-conventions-genai). Without any of these, the pipeline infers a
compaction from a sharp drop of input tokens (:mod:`features.session.compaction`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from features.calls.actions import tool_call_fields
from features.calls.canonical import canonical_json
from features.calls.codeact import MAX_CODE_CHARS, code_blocks, prompt_tools
from features.calls.unknown import UNRECORDED
from features.calls.waits import declared_timeout_s, waits_for_human
from features.prices.reported import reported_cost
from features.redact.engine import redact
from features.text.clip import excerpt
from features.text.hosts import host_of
from ingest.decoded import SPAN_KIND_CLIENT, STATUS_ERROR, Draft, SpanRecord, compaction_key
from ingest.semconv.attributes import (
    AGENT_OPERATIONS,
    MODEL_OPERATIONS,
    NOT_A_STEP,
    OTHER_OPERATIONS,
    TOOL_OPERATIONS,
    first,
    first_int,
    first_str,
    json_value,
    real_id,
)
from ingest.semconv.codeact import (
    Child,
    CodeMemory,
    CodeStep,
    ModelFacts,
    by_start,
    is_code_step,
    tagged_action_drafts,
)
from ingest.semconv.dialects import restate
from ingest.semconv.workspace import workspace_detail
from models.records import Step, StepKind

COMPACTION_EVENT = "trajwatch.compaction"
OPERATION = "gen_ai.operation.name"
SPAN_SOURCE = "otlp"
"""The ``source`` of every step made from a span; its ``source_ref`` is ``trace:span``."""

SESSION_ATTRIBUTES = (
    "gen_ai.conversation.id",
    "session.id",
    # the session spelling of the dialects ingest.semconv.dialects restates
    "langsmith.metadata.session_id",
    "langsmith.metadata.thread_id",
    "langsmith.metadata.conversation_id",
    "ai.telemetry.metadata.sessionId",
    "traceloop.association.properties.session_id",
    # OpenLLMetry's copy of LangGraph's thread id on every span: the session the root span
    # names as gen_ai.conversation.id (recorded at 0.62.4), but that span ends last, so the
    # others must name it themselves (or a live run splits: fixtures/frameworks/)
    "traceloop.association.properties.thread_id",
)


def spans_to_drafts(
    spans: Iterable[SpanRecord],
    *,
    session_attribute: str | None = None,
    arrival: int = 0,
    memory: CodeMemory | None = None,
    main: AbstractSet[str] | None = None,
    held: AbstractSet[str] = frozenset(),
    restated: bool = False,
) -> list[Draft]:
    """Map a batch of spans to drafts. Pure but for ``memory``; spans that mean nothing
    to trajwatch (plain CHAIN or framework spans without errors) produce no draft.

    ``session_attribute`` is an extra attribute that names the session, read after
    ``gen_ai.conversation.id`` and ``session.id``. ``memory`` keeps, across batches, the
    model calls and traced calls under step spans not seen yet, and the steps mapped
    (:class:`CodeMemory`): a traced call read after its step maps the step again, its new
    drafts are among those returned and the ones it no longer makes are retracted
    (:meth:`CodeMemory.take_retracted`). Without it a CodeAct step shows its code actions
    only when its children are in the same batch.

    ``main`` names the agent spans that are the session's run; without it they are
    judged from the batch alone (the outermost ones: right for a whole trace, not for a
    piece of one; the pipeline decides from the trace, :mod:`ingest.pipeline.agent_roles`).
    The spans in ``held`` (agents whose role is not decided yet) give no drafts here: the
    caller maps each with :func:`agent_span_drafts` once it is. ``restated``: ``spans``
    went through :func:`~ingest.semconv.dialects.restate` already.
    """
    batch = list(spans) if restated else restate(spans)
    by_id = {s.span_id: s for s in batch}
    if main is None:
        main = _main_agents(batch, by_id)
    children = _children(batch)
    revised = _remember(batch, by_id, memory) if memory is not None else []
    drafts: list[Draft] = []
    for span in batch:
        if span.span_id in held:
            continue
        for draft in _span_drafts(span, by_id, main, session_attribute, children, memory):
            draft.arrival = arrival + len(drafts)
            drafts.append(draft)
    for draft in revised:
        draft.arrival = arrival + len(drafts)
        drafts.append(draft)
    return drafts


def agent_span_drafts(
    span: SpanRecord, *, main: bool, session_attribute: str | None = None, arrival: int = 0
) -> list[Draft]:
    """The drafts of one (restated) agent span whose role was decided after its batch
    (``held`` by :func:`spans_to_drafts`): ``main`` if it is the session's run."""
    drafts = _span_drafts(
        span, {span.span_id: span}, {span.span_id} if main else set(), session_attribute, {}
    )
    for i, draft in enumerate(drafts):
        draft.arrival = arrival + i
    return drafts


def span_role(span: SpanRecord) -> str:
    """:func:`operation_of`, with an ``invoke_workflow`` agent span as ``workflow``: what
    the trace index keeps of a (restated) span for :mod:`ingest.pipeline.agent_roles`."""
    role = operation_of(span)
    if role == "agent" and span.attributes.get(OPERATION) == "invoke_workflow":
        return "workflow"
    return role


def operation_of(span: SpanRecord) -> str:
    """The span's role: ``model``, ``tool``, ``agent``, ``egress`` or ``other``."""
    attrs = span.attributes
    if span.kind == SPAN_KIND_CLIENT and "mcp.method.name" in attrs:
        # An MCP client call is the wire side of a tool call (the MCP conventions let
        # it carry gen_ai.operation.name=execute_tool too): egress under its tool span.
        return "egress"
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, str):
        if op in MODEL_OPERATIONS:
            return "model"
        if op in TOOL_OPERATIONS:
            return "tool"
        if op in AGENT_OPERATIONS:
            return "agent"
        if op in OTHER_OPERATIONS:
            return "other"
    oi = attrs.get("openinference.span.kind")
    if isinstance(oi, str):
        oi = oi.upper()
        if oi == "LLM":
            return "model"
        if oi == "TOOL":
            return "tool"
        if oi == "AGENT":
            return "agent"
    if span.kind == SPAN_KIND_CLIENT and _is_egress(attrs):
        return "egress"
    head = span.name.split(" ", 1)[0]
    if head in MODEL_OPERATIONS:
        return "model"
    if head in TOOL_OPERATIONS:
        return "tool"
    if head in AGENT_OPERATIONS:
        return "agent"
    if "gen_ai.system" in attrs and first_int(attrs, _INPUT_TOKENS) is not None:
        return "model"  # pre-operation-name GenAI instrumentations
    return "other"


# -- attribute readers ----------------------------------------------------------

_INPUT_TOKENS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
)
_OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)
_URL = ("url.full", "http.url")
_HOST = ("server.address", "net.peer.name", "http.host", "network.peer.address", "net.peer.ip")
_METHOD = ("http.request.method", "http.method")
_HTTP_STATUS = ("http.response.status_code", "http.status_code")
_REQUEST_BYTES = ("http.request.body.size", "http.request_content_length")
_RESPONSE_BYTES = ("http.response.body.size", "http.response_content_length")


def _is_egress(attrs: Mapping[str, Any]) -> bool:
    if any(k in attrs for k in _URL) or any(k in attrs for k in _METHOD):
        return True
    return "mcp.method.name" in attrs


def _message_text(message: Any) -> str | None:
    """Text of one chat message in any of the shapes in the wild."""
    if isinstance(message, str):
        return message
    if not isinstance(message, Mapping):
        return None
    parts = message.get("parts")
    if isinstance(
        parts, list
    ):  # GenAI conventions: {"role", "parts": [{"type": "text", "content"}]}
        texts = [p.get("content") for p in parts if isinstance(p, Mapping)]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        return joined or None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI style: [{"type": "text", "text": ...}]
        texts = [c.get("text") or c.get("content") for c in content if isinstance(c, Mapping)]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def _messages(value: Any) -> list[Any]:
    if value is None:  # the attribute absent (most of the names read): no ABC checks
        return []
    value = json_value(value)
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        return list(value["messages"])
    if isinstance(value, list):
        return value
    return []


_MODEL_MESSAGES = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
"""The attributes a model call's readers (:func:`_model_draft`) all decode, each one read
by at least one of them whatever the span holds: by two or three, the input messages."""
_AGENT_MESSAGES = ("gen_ai.input.messages", "gen_ai.system_instructions")
"""The same for an agent's readers (:func:`_agent_drafts`: its goal, its instructions)."""
_HISTORY_FALLBACK = "input.value"
"""Where the first user message (:func:`_first_user_text`) and the system messages
(:func:`_system_text`) are looked for, both, when neither ``gen_ai.input.messages`` nor
``gen_ai.prompt`` holds any: OpenInference's whole LLM input, tens of KB a call."""


def _messages_decoded(attrs: Mapping[str, Any], names: tuple[str, ...]) -> Mapping[str, Any]:
    """``attrs`` with the JSON text of each of ``names`` decoded once (``json_value``), for
    the readers of a span's messages, which decode what they read themselves: they read
    the same values (``json_value`` of a decoded value is that value; of a text it does not
    decode, that text), and a conversation's history (the input messages, often the
    largest attribute of a span) is parsed once instead of once for each reader. ``names``
    are the attributes every call reads (so none is decoded for nothing), and
    :data:`_HISTORY_FALLBACK`, which the first user message's reader reads when neither
    attribute before it has a message."""
    get = attrs.get
    if not get("gen_ai.input.messages") and not get("gen_ai.prompt"):
        names += (_HISTORY_FALLBACK,)
    decoded: dict[str, Any] | None = None
    for name in names:  # a loop, not a comprehension: most spans have none of them
        value = get(name)
        if isinstance(value, str):
            parsed = json_value(value)
            if parsed is not value:
                decoded = decoded or {}
                decoded[name] = parsed
    return attrs if decoded is None else {**attrs, **decoded}


def _first_user_text(attrs: Mapping[str, Any]) -> str | None:
    """The first user message of a model or agent input: the goal anchor's raw material."""
    for name in ("gen_ai.input.messages", "gen_ai.prompt", "input.value"):
        for message in _messages(attrs.get(name)):
            if isinstance(message, Mapping) and message.get("role") == "user":
                text = _message_text(message)
                if text:
                    return text
    # OpenInference flattened messages: llm.input_messages.<i>.message.role and content
    # (or content parts, message.contents.<j>.message_content.text). The OpenAI Agents
    # SDK's response spans number them from 1, keeping 0 for the instructions.
    i = 0 if "llm.input_messages.0.message.role" in attrs else 1
    while f"llm.input_messages.{i}.message.role" in attrs:
        if attrs[f"llm.input_messages.{i}.message.role"] == "user":
            text = _flattened_content(attrs, f"llm.input_messages.{i}.message.")
            if text:
                return text
        i += 1
    return None


def _flattened_content(attrs: Mapping[str, Any], prefix: str) -> str | None:
    """An OpenInference flattened message's text: ``content``, else its text parts."""
    content = attrs.get(prefix + "content")
    if isinstance(content, str) and content:
        return content
    texts = []
    for j in range(_MAX_PARTS):
        text = attrs.get(f"{prefix}contents.{j}.message_content.text")
        if text is None and f"{prefix}contents.{j}.message_content.type" not in attrs:
            break
        if isinstance(text, str) and text:
            texts.append(text)
    return "\n".join(texts) or None


_MAX_PARTS = 64
"""Content parts of one flattened message read: a bound, not a limit met."""


def _system_text(attrs: Mapping[str, Any]) -> str | None:
    """The system instructions of a model or agent input: ``gen_ai.system_instructions``
    (a JSON list of text parts, or text), else the system messages the GenAI conventions
    keep in the chat history (``gen_ai.input.messages``, deprecated ``gen_ai.prompt``,
    OpenInference's ``input.value``: where smolagents lists its tools), else
    OpenInference's flattened system messages (``llm.input_messages.<i>.message.*``,
    numbered from 0, or from 1 by the OpenAI Agents SDK)."""
    value = json_value(attrs.get("gen_ai.system_instructions"))
    if isinstance(value, list):
        texts = [p.get("content") for p in value if isinstance(p, Mapping)]
        joined = "\n".join(t for t in texts if isinstance(t, str) and t)
        if joined:
            return joined
    elif isinstance(value, str) and value:
        return value
    for name in ("gen_ai.input.messages", "gen_ai.prompt", "input.value"):
        system = [
            _message_text(message)
            for message in _messages(attrs.get(name))[:MAX_SCANNED_MESSAGES]
            if isinstance(message, Mapping) and message.get("role") in ("system", "developer")
        ]
        if any(system):
            return "\n".join(text for text in system if text)
    # OpenInference flattened messages (llm.input_messages.<i>.message.role = system)
    flattened: list[str] = []
    i = 0
    while i < MAX_SCANNED_MESSAGES and (f"llm.input_messages.{i}.message.role" in attrs or i == 0):
        if attrs.get(f"llm.input_messages.{i}.message.role") in ("system", "developer"):
            text = _flattened_content(attrs, f"llm.input_messages.{i}.message.")
            if text:
                flattened.append(text)
        i += 1
    return "\n".join(flattened) or None


def _output_text(attrs: Mapping[str, Any]) -> str | None:
    for name in ("gen_ai.output.messages", "gen_ai.completion"):
        value = json_value(attrs.get(name))
        if isinstance(value, list):
            texts = [_message_text(m) for m in value]
            joined = "\n".join(t for t in texts if t)
            if joined:
                return joined
        elif isinstance(value, str) and value:
            return value
    content = attrs.get("llm.output_messages.0.message.content")
    if isinstance(content, str) and content:
        return content
    value = json_value(attrs.get("output.value"))
    if value is not None and isinstance(value, Mapping):
        return _message_text(value)
    return value if isinstance(value, str) and value else None


def _goal_text(attrs: Mapping[str, Any]) -> str | None:
    text = _first_user_text(attrs)
    if text:
        return text
    value = json_value(attrs.get("input.value"))
    if isinstance(value, Mapping):
        for key in ("task", "goal", "input", "query", "question", "prompt"):
            if isinstance(value.get(key), str):
                return str(value[key])
    if isinstance(value, str) and value:
        return value
    return None


def _tool_arguments(attrs: Mapping[str, Any]) -> Any:
    raw = first(
        attrs, ("gen_ai.tool.call.arguments", "tool_call.function.arguments", "input.value")
    )
    value = json_value(raw)
    # OpenInference's smolagents instrumentor wraps calls as
    # {"args": [...], "kwargs": {...}, "sanitize_inputs_outputs": ...}, its LlamaIndex one
    # as {"kwargs": {...}} (recorded at 4.6.1): unwrap it so the same call looks the same
    # whichever instrumentor recorded it.
    is_map = type(value) is dict or isinstance(value, Mapping)
    if is_map and "kwargs" in value and ("args" in value or len(value) == 1):
        kwargs = value.get("kwargs")
        args = value.get("args") or []
        items = kwargs.items() if isinstance(kwargs, Mapping) else ()
        unwrapped: dict[str, Any] = {k: v for k, v in items if k != ""}
        if args:
            unwrapped["args"] = args
        return unwrapped
    return value


def _result_text(attrs: Mapping[str, Any]) -> str | None:
    value = first(attrs, ("gen_ai.tool.call.result", "output.value"))
    if value is None:
        return None
    return value if isinstance(value, str) else canonical_json(value)


def _error_text(span: SpanRecord) -> str | None:
    if span.status_code != STATUS_ERROR:
        return None
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message")
            kind = event.attributes.get("exception.type")
            if message or kind:
                return f"{kind}: {message}" if kind and message else str(message or kind)
    return span.status_message or first_str(span.attributes, ("error.type",)) or "error"


def session_hint(span: SpanRecord, session_attribute: str | None) -> str | None:
    """The session ``span`` names in its own attributes (:data:`SESSION_ATTRIBUTES` in
    that order, then ``session_attribute``), or None."""
    return _named_session(span.attributes, session_attribute)


def resource_session_hint(span: SpanRecord, session_attribute: str | None) -> str | None:
    """The session ``span``'s resource names (the same attributes), or None.

    Some SDKs set the session once, on the process's resource, and not on each span:
    Gemini CLI puts ``session.id`` in its resource (``packages/core/src/telemetry/sdk.ts``)
    and its HTTP instrumentation's client spans carry none. A resource is the whole
    process, so it is the weakest claim: the pipeline reads it only when no span of the
    trace names a session (:meth:`ingest.pipeline.trace_index.TraceIndex.session_of`)."""
    return _named_session(span.resource, session_attribute)


def _named_session(attributes: Mapping[str, Any], session_attribute: str | None) -> str | None:
    """The first non-empty text among :data:`SESSION_ATTRIBUTES`, then
    ``session_attribute``, in ``attributes``; None when none is there."""
    names = (*SESSION_ATTRIBUTES, session_attribute) if session_attribute else SESSION_ATTRIBUTES
    return first_str(attributes, names) or None


# -- span → drafts ----------------------------------------------------------------


def _base(span: SpanRecord, session_attribute: str | None) -> dict[str, Any]:
    return {
        "session_hint": session_hint(span, session_attribute),
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
    }


_AGENT_NAMES = (
    "gen_ai.agent.name",
    "gen_ai.workflow.name",
    "traceloop.workflow.name",
    "agent.name",
)


def _step(span: SpanRecord, kind: StepKind, ts: int, **fields: Any) -> Step:
    # A workflow's name is its agent name: the GenAI conventions (v0.1.0 of their own
    # repository) replaced gen_ai.workflow.name with gen_ai.agent.name; older
    # instrumentations still send the first, OpenLLMetry its traceloop.* spelling,
    # OpenInference ``agent.name`` (the OpenAI Agents SDK's agent spans).
    agent = first_str(span.attributes, _AGENT_NAMES)
    if agent is None:
        agent = first_str(span.resource, ("service.name",))
    return Step(
        step_id="",
        session_id="",
        kind=kind,
        ts=ts,
        agent=agent,
        source=SPAN_SOURCE,
        source_ref=f"{span.trace_id}:{span.span_id}",
        **fields,
    )


def _span_drafts(
    span: SpanRecord,
    by_id: Mapping[str, SpanRecord],
    main: AbstractSet[str],
    session_attribute: str | None,
    children: Mapping[str, list[SpanRecord]],
    memory: CodeMemory | None = None,
) -> list[Draft]:
    role = operation_of(span)
    base = _base(span, session_attribute)
    ref = f"{span.trace_id}:{span.span_id}"
    drafts: list[Draft] = []
    if role == "other" and is_code_step(span):
        drafts.extend(_code_drafts(span, by_id, children.get(span.span_id, []), memory, base))
    if role == "model":
        parent = by_id.get(span.parent_span_id or "")
        if parent is None or operation_of(parent) != "model":
            model = _model_draft(span, base, ref, _agent_context(span))
            drafts.append(model)
            text = model.step.text
            if text and "<execute_" in text and (parent is None or not is_code_step(parent)):
                drafts.extend(_tagged_drafts(span, text, children, base))
        # else: the provider SDK's span under a framework's span of the same call
        # (LangChain's ChatOpenAI.chat over openai.chat): one model call, counted once
    elif role == "tool":
        drafts.extend(_tool_drafts(span, base, ref))
    elif role == "agent":
        drafts.extend(_agent_drafts(span, span.span_id in main, base, ref))
    elif role == "egress":
        drafts.append(_egress_draft(span, base, ref))
    elif _is_compaction_span(span):
        attrs = span.attributes
        drafts.append(
            _compaction_draft(
                span,
                span.end_ns,
                {
                    "trajwatch.compaction.tokens_before": first(
                        attrs, ("trajwatch.compaction.tokens_before", "compaction.tokens_before")
                    ),
                    "trajwatch.compaction.tokens_after": first(
                        attrs, ("trajwatch.compaction.tokens_after", "compaction.tokens_after")
                    ),
                    "trajwatch.compaction.summary": first(
                        attrs, ("trajwatch.compaction.summary", "compaction.summary")
                    ),
                },
                base,
                ref,
            )
        )
    elif (
        span.status_code == STATUS_ERROR
        and span.attributes.get(OPERATION) != NOT_A_STEP
        and not drafts  # a failed code action carries its step's failure
    ):
        error = excerpt(_error_text(span) or "error")
        step = _step(
            span,
            StepKind.ERROR,
            span.end_ns,
            status="error",
            error=error,
            detail={"span_name": span.name},
        )
        drafts.append(Draft(step=step, fallback_id=f"{ref}:error", **base))
    for event in span.events:
        if event.name == COMPACTION_EVENT:
            drafts.append(_compaction_draft(span, event.time_ns, event.attributes, base, ref))
    return drafts


def _children(batch: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    """Parent span id → its children in the batch, by start time."""
    out: dict[str, list[SpanRecord]] = {}
    for span in batch:
        if span.parent_span_id:
            out.setdefault(span.parent_span_id, []).append(span)
    for spans in out.values():
        spans.sort(key=lambda s: (s.start_ns, s.span_id))
    return out


def _code_drafts(
    step: SpanRecord,
    by_id: Mapping[str, SpanRecord],
    under: list[SpanRecord],
    memory: CodeMemory | None,
    base: dict[str, Any],
) -> list[Draft]:
    """The code actions of a smolagents step span (:mod:`ingest.semconv.codeact`), read from its
    model call's output, with its TOOL and AGENT children as the calls traced already
    (those of this batch, those ``earlier`` batches left in the memory, and those of the
    step as mapped before, when it is read again)."""
    earlier: tuple[ModelFacts | None, list[Child]] = (None, [])
    before = None
    if memory is not None:
        earlier, before = memory.take(step.span_id), memory.mapped(step.span_id)
    model = next((_model_facts(s) for s in under if operation_of(s) == "model"), None)
    model = model or earlier[0] or (before.model if before is not None else None)
    cap = CodeMemory.MAX_OUTPUT_CHARS
    if model is not None and len(model.output) > cap:  # as the memory keeps it
        model = ModelFacts(model.end_ns, model.output[:cap], model.tools)
    tools: set[str] = set()
    agent = _agent_parent(step, by_id)
    if agent is not None:
        tools.update(_smolagents_tools(agent.attributes))
    found = list(before.children) if before is not None else []
    found += earlier[1]
    found += [child for span in under if (child := _child(span)) is not None]
    unique = {child.span_id: child for child in reversed(found)}  # the first read of each
    observation = first_str(step.attributes, ("output.value",))
    error = _error_text(step)
    code = CodeStep(
        span=CodeStep.slim(step, _AGENT_NAMES),
        model=model,
        tools=frozenset(tools),
        children=by_start(list(unique.values())),
        # what is read of it: a head of MAX_TEXT_CHARS, and whether it is longer than
        # restates_code reads (features.calls.codeact)
        observation=observation[: MAX_CODE_CHARS + 1] if observation is not None else None,
        error=error[:cap] if error is not None else None,
        base=base,
    )
    drafts = code.drafts(_step)
    if memory is not None:
        memory.revise(code, drafts)
    return drafts


def _model_facts(span: SpanRecord) -> ModelFacts:
    """What a step needs of its model call; no output when the model answered with
    structured tool calls (a ``ToolCallingAgent`` step: its code blocks, if any, are
    text, not actions)."""
    attrs = span.attributes
    output = "" if _calls_tools(attrs) else _output_text(attrs) or ""
    tools = prompt_tools(_system_text(attrs)) if code_blocks(output) else frozenset()
    return ModelFacts(span.end_ns, output, tools)


def _calls_tools(attrs: Mapping[str, Any]) -> bool:
    """Whether a model call's output holds structured tool calls (OpenInference's
    flattened ``tool_calls``, or a ``tool_call`` part of the GenAI output messages)."""
    if "llm.output_messages.0.message.tool_calls.0.tool_call.function.name" in attrs:
        return True
    messages = json_value(attrs.get("gen_ai.output.messages"))
    if not isinstance(messages, list):
        return False
    for message in messages[:16]:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        if isinstance(parts, list) and any(
            isinstance(part, Mapping) and part.get("type") == "tool_call" for part in parts
        ):
            return True
    return False


def _child(span: SpanRecord) -> Child | None:
    """A tool or agent span as the step above it needs it (None for other spans)."""
    role = operation_of(span)
    failed = span.status_code == STATUS_ERROR
    if role == "tool":
        name = first_str(span.attributes, ("gen_ai.tool.name", "tool.name"))
        return Child(span.span_id, name or span.name, failed, span.start_ns)
    if role == "agent":
        return Child(span.span_id, None, failed, span.start_ns)
    return None


def _remember(
    batch: Iterable[SpanRecord], by_id: Mapping[str, SpanRecord], memory: CodeMemory
) -> list[Draft]:
    """Keep what a step span that is not in this batch will need: a model call whose
    output holds code, and the tool and agent spans beside it, by their parent. One whose
    step was mapped already maps it again (:meth:`CodeMemory.revise`): returns the
    drafts that makes anew."""
    revised: list[Draft] = []
    for span in batch:
        parent = span.parent_span_id
        if not parent or parent in by_id:
            continue  # the parent is here: it is handled in this batch
        mapped = memory.mapped(parent)
        if operation_of(span) == "model":
            facts = _model_facts(span)
            if not (facts.output and code_blocks(facts.output)):
                continue
            richer = mapped.with_model(facts) if mapped is not None else None
            if mapped is None:
                memory.remember_model(parent, facts)
        else:
            child = _child(span)
            if child is None:
                continue
            richer = mapped.with_child(child) if mapped is not None else None
            if mapped is None:
                memory.remember_child(parent, child)
        if richer is not None:
            revised += memory.revise(richer, richer.drafts(_step))
    return [draft for draft in revised if memory.makes(draft)]


def _tagged_drafts(
    model: SpanRecord, output: str, children: Mapping[str, list[SpanRecord]], base: dict[str, Any]
) -> list[Draft]:
    """An OpenHands CodeAct action in a model call's (redacted) output
    (:mod:`ingest.semconv.codeact`), its observation read from the next model call of the same
    parent in the batch."""
    observation, observed = None, model.end_ns
    siblings = children.get(model.parent_span_id or "", [])
    later = [s for s in siblings if s.start_ns >= model.end_ns and operation_of(s) == "model"]
    if later:
        observation = _reply_to(later[0].attributes, output)
        observed = later[0].start_ns
    return tagged_action_drafts(
        model,
        model_output=output,
        observation=observation,
        observed_ns=observed,
        make_step=_step,
        base=base,
    )


def _reply_to(attrs: Mapping[str, Any], output: str) -> str | None:
    """The text of the message that follows, in a model call's input, the last assistant
    message holding ``output``'s first code block (the observation of the action it
    wrote), or None."""
    blocks = code_blocks(output)
    if not blocks or not blocks[0][1]:
        return None
    code = blocks[0][1]
    messages: list[Any] = []
    for name in ("gen_ai.input.messages", "input.value"):
        messages = _messages(attrs.get(name))
        if messages:
            break
    for i in range(len(messages) - 2, -1, -1):
        message = messages[i]
        if (
            isinstance(message, Mapping)
            and message.get("role") == "assistant"
            and code in (_message_text(message) or "")
        ):
            return _message_text(messages[i + 1])
    return None


def _smolagents_tools(attrs: Mapping[str, Any]) -> set[str]:
    """The tool and managed-agent names smolagents' instrumentation puts on its agent
    span: ``smolagents.tools_names`` and ``smolagents.managed_agents.<i>.name``."""
    names: set[str] = set()
    listed = json_value(attrs.get("smolagents.tools_names"))
    if isinstance(listed, list):
        names.update(n for n in listed if isinstance(n, str))
    for i in range(64):
        name = attrs.get(f"smolagents.managed_agents.{i}.name")
        if not isinstance(name, str):
            break
        names.add(name)
    return names


def _agent_context(span: SpanRecord) -> str:
    """The context window a model call belongs to: the agent its span names
    (``gen_ai.agent.id``, else ``gen_ai.agent.name``), else ``main``. A sub-agent has its
    own context window, so its prompt sizes are not comparable with the main agent's.
    Read from the span alone, not from the agent span above it: that one ends (and is
    exported) after the call, so what is known of it depends on how the spans were
    batched, and the context must not."""
    attrs = span.attributes
    agent = first_str(attrs, ("gen_ai.agent.id", "gen_ai.agent.name"))
    return f"agent:{agent}" if agent else "main"


def _output_finish(attrs: Mapping[str, Any]) -> str | None:
    """The ``finish_reason`` of the first output message that has one."""
    messages = json_value(attrs.get("gen_ai.output.messages"))
    for message in messages if isinstance(messages, list) else []:
        reason = message.get("finish_reason") if isinstance(message, Mapping) else None
        if isinstance(reason, str) and reason:
            return reason
    return None


def _model_draft(span: SpanRecord, base: dict[str, Any], ref: str, context: str) -> Draft:
    attrs = _messages_decoded(span.attributes, _MODEL_MESSAGES)
    reasons = json_value(first(attrs, ("gen_ai.response.finish_reasons", "llm.finish_reason")))
    finish = reasons[0] if isinstance(reasons, list) and reasons else reasons
    if finish is None:  # the conventions' OutputMessage carries its own finish_reason
        finish = _output_finish(attrs)
    response_id = first_str(attrs, ("gen_ai.response.id",))
    output = _output_text(attrs)
    user = _first_user_text(attrs)
    detail: dict[str, Any] = {}
    provider = first_str(
        attrs, ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    )
    if provider:
        detail["provider"] = provider
    if user:
        detail["user_message"] = excerpt(user, 4096)
    instructions = _system_text(attrs)
    if instructions:
        detail["system_instructions"] = excerpt(instructions, 4096)
    detail.update(_compaction_signal(attrs))
    requests = _tool_requests(attrs)
    if requests:
        detail["tool_requests"] = requests
    step = _step(
        span,
        StepKind.MODEL_CALL,
        span.start_ns,
        end_ts=span.end_ns,
        model=first_str(attrs, ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")),
        finish_reason=finish if isinstance(finish, str) else None,
        tokens_in=first_int(attrs, _INPUT_TOKENS),
        tokens_out=first_int(attrs, _OUTPUT_TOKENS),
        cost=reported_cost(attrs),
        text=excerpt(output) if output else None,
        status="error" if span.status_code == STATUS_ERROR else "ok",
        error=excerpt(_error_text(span) or "") or None,
        detail=detail,
    )
    natural = f"model_call/{response_id}" if response_id else None
    return Draft(step=step, fallback_id=ref, natural_key=natural, context=context, **base)


MAX_TOOL_REQUESTS = 8
"""Tool calls of one model answer kept in ``detail.tool_requests``."""


def _tool_requests(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tool calls a model call's answer asks for (GenAI ``tool_call`` output parts,
    else OpenInference's flattened ``tool_calls``), as ``{"name", "id"}`` plus what the
    call declares about how long it may run: ``timeout_s`` and ``human`` (it waits for a
    person; :mod:`features.calls.waits`). A tool call's span is exported when it ends, so
    until then this is all a trace says of a call in flight (a stalled run's last call)."""
    found: list[tuple[Any, Any, Any]] = []
    for message in _messages(attrs.get("gen_ai.output.messages"))[:16]:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, Mapping) and part.get("type") == "tool_call":
                found.append((part.get("name"), part.get("id"), part.get("arguments")))
    prefix = "llm.output_messages.0.message.tool_calls"
    for index in range(MAX_TOOL_REQUESTS if not found else 0):
        name = attrs.get(f"{prefix}.{index}.tool_call.function.name")
        if name is None:
            break
        found.append(
            (
                name,
                attrs.get(f"{prefix}.{index}.tool_call.id"),
                attrs.get(f"{prefix}.{index}.tool_call.function.arguments"),
            )
        )
    out: list[dict[str, Any]] = []
    for name, call_id, arguments in found[:MAX_TOOL_REQUESTS]:
        if not isinstance(name, str) or not name:
            continue
        args = json_value(arguments) if isinstance(arguments, str) else arguments
        request: dict[str, Any] = {"name": name[:200]}
        if isinstance(call_id, str) and call_id:
            request["id"] = call_id[:200]
        timeout = declared_timeout_s(name, args)
        if timeout is not None:
            request["timeout_s"] = timeout
        if waits_for_human(name, args):
            request["human"] = True
        out.append(request)
    return out


def _compaction_signal(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """What an inference span says about compaction (GenAI conventions, semantic-conventions-genai
    PR #162): ``gen_ai.conversation.compacted`` (the call's context is a compacted view of a
    prior conversation; set only when true) as ``compacted``, and the last compaction message
    part (``{"type": "compaction", "id", "content"}``) of the input or output messages as
    ``compaction_part``: its id (else a digest of its content) and its summary, redacted.
    The pipeline turns a change of these into an explicit compaction step."""
    out: dict[str, Any] = {}
    flag = attrs.get("gen_ai.conversation.compacted")
    if flag is True or (isinstance(flag, str) and flag.strip().lower() == "true"):
        out["compacted"] = True
    part: Mapping[str, Any] | None = None
    for name in ("gen_ai.input.messages", "gen_ai.output.messages"):
        for message in _messages(attrs.get(name))[-MAX_SCANNED_MESSAGES:]:
            parts = message.get("parts") if isinstance(message, Mapping) else None
            if isinstance(parts, list):
                for p in parts[-MAX_SCANNED_MESSAGES:]:
                    if isinstance(p, Mapping) and p.get("type") == "compaction":
                        part = p
    if part is not None:
        raw_content, raw_id = part.get("content"), part.get("id")
        content = raw_content if isinstance(raw_content, str) else ""
        if isinstance(raw_id, str) and raw_id:
            ident = raw_id
        else:
            digest = hashlib.sha256(content.encode("utf-8", "replace")).hexdigest()[:16]
            ident = f"sha256:{digest}"
        out["compaction_part"] = {"id": excerpt(ident, 120)}
        if content:
            out["compaction_part"]["summary"] = excerpt(content)
    return out


MAX_SCANNED_MESSAGES = 512
"""Messages (and parts of one message) read for a compaction part: a bound on one span's work."""


def _tool_drafts(span: SpanRecord, base: dict[str, Any], ref: str) -> list[Draft]:
    attrs = span.attributes
    tool = first_str(attrs, ("gen_ai.tool.name", "tool.name", "tool_call.function.name"))
    if tool is None:
        tool = span.name.removeprefix("execute_tool ").strip() or None
    call_id = real_id(first_str(attrs, ("gen_ai.tool.call.id", "tool_call.id")))
    arguments = _tool_arguments(attrs)
    fields = tool_call_fields(tool, arguments)
    if arguments is None:  # not recorded (content capture off): unknown, not "none"
        fields["detail"][UNRECORDED] = True
    call = _step(
        span, StepKind.TOOL_CALL, span.start_ns, end_ts=span.end_ns, call_id=call_id, **fields
    )
    failed = span.status_code == STATUS_ERROR
    result_text = _result_text(attrs)
    result = _step(
        span,
        StepKind.TOOL_RESULT,
        span.end_ns,
        tool=tool,
        call_id=call_id,
        result=excerpt(result_text) if result_text else None,
        status="error" if failed else "ok",
        error=excerpt(_error_text(span) or "") or None,
        detail={"duration_ns": max(0, span.end_ns - span.start_ns)},
    )
    call_key = f"tool_call/{call_id}" if call_id else None
    result_key = f"tool_result/{call_id}" if call_id else None
    return [
        Draft(step=call, fallback_id=f"{ref}:call", natural_key=call_key, **base),
        Draft(step=result, fallback_id=f"{ref}:result", natural_key=result_key, **base),
    ]


def _agent_parent(span: SpanRecord, by_id: Mapping[str, SpanRecord]) -> SpanRecord | None:
    """The nearest agent span above ``span`` in the batch, if any."""
    parent = by_id.get(span.parent_span_id or "")
    seen = 0
    while parent is not None and seen < 256:
        if operation_of(parent) == "agent":
            return parent
        parent = by_id.get(parent.parent_span_id or "")
        seen += 1
    return None


def _main_agents(batch: Iterable[SpanRecord], by_id: Mapping[str, SpanRecord]) -> set[str]:
    """The agent spans of the batch that are the session's run, not a sub-agent: the
    outermost ones, and the one agent an outermost workflow wraps (ADK 2.x's
    ``invoke_workflow`` around the root agent, a root OpenLLMetry workflow around its
    agent): wrapper and agent are one run, one start (their drafts share the natural key
    and the pipeline folds them). A workflow of several agents keeps them sub-agents."""
    nearest = {
        span.span_id: _agent_parent(span, by_id) for span in batch if operation_of(span) == "agent"
    }
    main = {span_id for span_id, parent in nearest.items() if parent is None}
    wrapped: dict[str, list[str]] = {}
    for span_id, parent in nearest.items():
        if parent is not None and parent.span_id in main:
            wrapped.setdefault(parent.span_id, []).append(span_id)
    for wrapper, agents in wrapped.items():
        if len(agents) == 1 and by_id[wrapper].attributes.get(OPERATION) == "invoke_workflow":
            main.add(agents[0])
    return main


def _agent_drafts(span: SpanRecord, outermost: bool, base: dict[str, Any], ref: str) -> list[Draft]:
    attrs = _messages_decoded(span.attributes, _AGENT_MESSAGES)
    goal = _goal_text(attrs)
    detail: dict[str, Any] = {"subagent": not outermost, **workspace_detail(span)}
    # the agent's description (``gen_ai.agent.description``: its role, its tools, its
    # standing rules) is a brief, not the task: read as instructions, it leaves the task
    # to the first user message a model call carries
    instructions = _system_text(attrs) or first_str(attrs, ("gen_ai.agent.description",))
    if instructions:
        detail["system_instructions"] = excerpt(instructions, 4096)
    start = _step(
        span,
        StepKind.START,
        span.start_ns,
        text=excerpt(goal) if goal else None,
        detail=detail,
    )
    drafts = [
        Draft(
            step=start,
            fallback_id=f"{ref}:start",
            natural_key="start" if outermost else None,
            **base,
        )
    ]
    if outermost:
        failed = span.status_code == STATUS_ERROR
        end = _step(
            span,
            StepKind.END,
            span.end_ns,
            status="error" if failed else ("ok" if span.status_code else None),
            error=excerpt(_error_text(span) or "") or None,
            detail={"end_status": "failure" if failed else "success"},
        )
        drafts.append(Draft(step=end, fallback_id=f"{ref}:end", natural_key="end", **base))
    return drafts


def _egress_draft(span: SpanRecord, base: dict[str, Any], ref: str) -> Draft:
    attrs = span.attributes
    url = first_str(attrs, _URL)
    host = first_str(attrs, _HOST)
    if host is None and url:
        host = host_of(url)
    method = first_str(attrs, _METHOD)
    mcp = first_str(attrs, ("mcp.method.name",))
    detail: dict[str, Any] = {}
    for key, names in (("request_bytes", _REQUEST_BYTES), ("response_bytes", _RESPONSE_BYTES)):
        size = first_int(attrs, names)
        if size is not None:
            detail[key] = size
    if mcp:
        detail["mcp_method"] = mcp
        tool = first_str(attrs, ("gen_ai.tool.name",))
        if tool:
            detail["mcp_tool"] = tool
    port = first_int(attrs, ("server.port", "net.peer.port"))
    if port is not None:
        detail["port"] = port
    safe_url = redact(url) if url else None
    step = _step(
        span,
        StepKind.EGRESS,
        span.start_ns,
        end_ts=span.end_ns,
        egress_host=host.lower() if host else None,
        egress_url=safe_url,
        egress_method=(method or mcp or None),
        http_status=first_int(attrs, _HTTP_STATUS),
        action=f"egress {method or mcp or '?'} {host.lower() if host else '?'}",
        status="error" if span.status_code == STATUS_ERROR else "ok",
        detail=detail,
    )
    return Draft(step=step, fallback_id=ref, **base)


COMPACTION_OPERATIONS = frozenset({"compact", "compaction", "context_compaction"})
COMPACTION_SPAN_NAMES = frozenset(
    {"compact", "compaction", "compact_messages", "context_compaction"}
)
"""Spans that are a compaction: the operation name instrumentations give one (``compact``,
custom but the one in use), or the span names of SDKs that emit a span per compaction
(pydantic-ai's ``compact_messages``, with ``compaction.tokens_before``/``_after``)."""


def _is_compaction_span(span: SpanRecord) -> bool:
    """A span (not a model, tool or agent span) standing for a compaction: named or
    operated as one, or marked ``gen_ai.conversation.compacted`` itself."""
    attrs = span.attributes
    op = attrs.get(OPERATION)
    if isinstance(op, str) and op.lower() in COMPACTION_OPERATIONS:
        return True
    if span.name.strip().lower() in COMPACTION_SPAN_NAMES:
        return True
    flag = attrs.get("gen_ai.conversation.compacted")
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


def _compaction_draft(
    span: SpanRecord, ts: int, attrs: Mapping[str, Any], base: dict[str, Any], ref: str
) -> Draft:
    before = first_int(attrs, ("trajwatch.compaction.tokens_before",))
    after = first_int(attrs, ("trajwatch.compaction.tokens_after",))
    summary = first_str(attrs, ("trajwatch.compaction.summary",))
    step = _step(
        span,
        StepKind.COMPACTION,
        ts,
        text=excerpt(summary) if summary else None,
        detail={"tokens_before": before, "tokens_after": after, "inferred": False},
    )
    return Draft(
        step=step,
        fallback_id=f"{ref}:compaction@{ts}",
        natural_key=compaction_key(before, after),
        **base,
    )
