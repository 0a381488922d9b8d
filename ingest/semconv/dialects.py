"""Spans of instrumentations that speak their own dialect, restated in the GenAI conventions.

Many agents are traced by libraries that predate, or only partly follow, the
OpenTelemetry GenAI conventions. :func:`to_genai` returns a span whose attributes say
the same thing in those conventions (``gen_ai.operation.name``, ``gen_ai.tool.name``,
``gen_ai.tool.call.arguments``/``result``/``id``, ``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.usage.*``), so
:mod:`ingest.semconv.spans` has one mapping to keep. Attributes the span already carries win:
a dialect only fills what is missing (the operation name is replaced only where the
dialect's own value is not a GenAI operation, as LangSmith's ``chain``, or where the span
stands for no step: :data:`~ingest.semconv.attributes.NOT_A_STEP`). A span with no dialect marker
is returned as it is, after one set intersection. :func:`restate` does the same for a
batch, and folds in what one span says about another.

Dialects, each as its library writes it (the attribute names come from the libraries'
sources; tests/unit/ingest/test_dialects.py builds spans of each shape with the
OpenTelemetry SDK):

- **OpenLLMetry / Traceloop** (LangChain, LangGraph, CrewAI, the Traceloop SDK's
  decorators): ``traceloop.span.kind`` ``tool`` | ``agent`` | ``workflow`` | ``task``,
  ``traceloop.entity.name``/``input``/``output`` (JSON: a LangChain tool's input is
  ``{"input_str", "inputs", "tags", "metadata", "kwargs"}``, its output
  ``{"output": <a serialised ToolMessage or the return value>, "kwargs"}``; a decorated
  function's input ``{"args", "kwargs"}``); ``llm.request.type``; messages flattened as
  ``gen_ai.prompt.{i}.role``/``content`` and ``gen_ai.completion.{i}.content``/
  ``finish_reason``. A ``workflow`` is the agent run only at the root of its trace
  (LangChain makes every chain with no traced parent one); ``task`` spans are chains.
  A system message in the run's input is its ``gen_ai.system_instructions``. Since 0.50
  (read at opentelemetry-instrumentation-langchain 0.62.4) a tool span also carries
  ``gen_ai.operation.name`` and the same callback JSON in ``gen_ai.tool.call.arguments``/
  ``result``: unwrapped there as well (the call's own arguments, its ``ToolMessage``'s
  content; the call id from the message or from the input's ``kwargs.tool_call_id``); and
  LangGraph's graph is a span of its own (``invoke_agent <graph>``, no input), parenting
  the root chain (``workflow``, ``gen_ai.provider.name`` ``langgraph``): one run, whose
  input :func:`restate` gives to the graph span.
- **LangSmith** OTel export: ``langsmith.span.kind`` ``tool`` | ``llm`` | ``chain`` |
  ``prompt`` | …, run inputs/outputs as JSON in ``gen_ai.prompt``/``gen_ai.completion``
  (a tool run's ``{"input": …}``/``{"output": …}``).
- **Vercel AI SDK** telemetry: ``ai.operationId`` ``ai.generateText`` | ``ai.streamText``
  | ``…Object`` (the agent run: ``ai.prompt`` holds ``{system, prompt, messages}``),
  ``….doGenerate``/``….doStream`` (a model call: ``ai.prompt.messages``,
  ``ai.response.text``/``finishReason``/``id``/``model``, ``ai.usage.promptTokens`` or
  ``inputTokens``), ``ai.toolCall`` (``ai.toolCall.name``/``id``/``args`` or ``input``/
  ``result`` or ``output``).
- **pydantic-ai** before its GenAI-named spans (instrumentation versions 1-2) and
  Logfire: ``running tool`` spans with ``tool_arguments``/``tool_response``,
  ``agent run`` spans with ``agent_name``, and at every version the run's messages in
  ``pydantic_ai.all_messages``; the OpenAI Agents SDK through Logfire: ``Function: …``
  spans with ``name``/``input``/``output``.
- **Google ADK** (scope ``gcp.vertex.agent``): ``execute_tool`` spans with the arguments
  and response in ``gcp.vertex.agent.tool_call_args``/``tool_response`` (a response that
  is not a dict wrapped as ``{"result": …}``), ``call_llm`` with the ``LlmRequest``
  (``{model, config: {system_instruction}, contents: [{role, parts: [{text}]}]}``) and
  ``LlmResponse`` (``{content: {parts}, finish_reason, model_version}``) as JSON in
  ``gcp.vertex.agent.llm_request``/``llm_response``; ``execute_tool (merged)`` (tool
  ``(merged tools)``) repeats the parallel calls it merges and is no call.
- **The OpenAI Agents SDK** through OpenInference (read at
  openinference-instrumentation-openai-agents 2.6.0): the trace's root ``AGENT`` span is
  named after the workflow and names no agent; :func:`restate` gives it the ``agent.name``
  of its first agent span. The task is on the ``generation``/``response`` spans'
  ``llm.input_messages`` only (a response span numbers them from 1).
- **LlamaIndex** through OpenInference (read at openinference-instrumentation-llama-index
  4.6.1): every dispatcher span of an LLM instance is an ``LLM`` span, named
  ``<Class>.<method>``; ``…._prepare_chat_with_tools`` (the message assembly before each
  ``chat``/``astream_chat``: no tokens, no output) is no model call. Recorded from the
  running packages (llama-index-core 0.14.25, ``fixtures/frameworks/``): the agent's run is
  the trace's root ``CHAIN`` span ``<Agent>.run`` (``FunctionAgent.run``; its input holds
  the workflow's state, not the task), restated as ``invoke_agent``; a ``FunctionTool`` span's
  output is the ``ToolOutput`` as JSON (``blocks``, ``tool_name``, ``raw_input``,
  ``raw_output``, ``is_error``): its result is ``raw_output``, and ``is_error`` fails it.
- **LangChain/LangGraph** through OpenInference (recorded at
  openinference-instrumentation-langchain 0.1.80, langgraph 1.2.24): the graph is the
  trace's root ``CHAIN`` span (metadata ``ls_integration: langgraph``), restated as
  ``invoke_agent``: the run (each execution of a node named ``agent`` is an ``AGENT`` span
  under it); a ``TOOL`` span's output is the ``ToolMessage`` as ``{"type": "tool", "data":
  {...}}``: its content is the result, its ``tool_call_id`` the call id, ``status:
  "error"`` fails it.
- **Claude Code**'s own spans (scope ``com.anthropic.claude_code.tracing``, behind
  ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA``): ``claude_code.interaction`` (one user turn,
  ``user_prompt``), ``claude_code.llm_request`` (``model``, ``input_tokens``,
  ``cache_read_tokens``, ``cache_creation_tokens``, ``output_tokens``, ``stop_reason``,
  ``success``/``error``), ``claude_code.tool`` (``tool_name``, ``tool_use_id``,
  ``tool_input`` or ``full_command``/``file_path``, a ``tool.output`` event with
  ``output``/``diff``/``content``) and its children ``claude_code.tool.execution``
  (``success``/``error``) and ``claude_code.tool.blocked_on_user``. Content Claude Code
  did not log is written ``<REDACTED>``: read as absent.

- **GenAI content in span events** (Strands Agents, and the conventions' own
  ``gen_ai.client.inference.operation.details`` event): ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` as attributes of that event
  (a tool span's ``tool_call`` part holds its ``arguments``, its ``tool_call_response``
  part its ``response``); or, in the pre-1.37 event form, one event per message
  (``gen_ai.user.message``, ``gen_ai.system.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message`` with ``content``) and ``gen_ai.choice`` (``message``,
  ``finish_reason``): on an ``execute_tool`` span the ``gen_ai.tool.message`` is the
  call's arguments and the ``gen_ai.choice`` its result. Strands writes each content as
  the JSON of its content blocks (``[{"text": …}]``) and a failed tool as
  ``gen_ai.tool.status: error``; an agent's system prompt is ``gen_ai.agent.system_prompt``.
  The 2024 event form (Semantic Kernel): ``gen_ai.content.prompt`` / ``…completion``
  events carrying ``gen_ai.prompt`` / ``gen_ai.completion``.

The session attributes of these dialects (LangSmith's thread metadata, the AI SDK's
``ai.telemetry.metadata.sessionId``, OpenLLMetry's association property) are read by
:data:`ingest.semconv.spans.SESSION_ATTRIBUTES`, on the spans as they arrive.

A tool result that the library reports as a LangChain ``ToolMessage`` with
``status: "error"`` marks the span failed: LangGraph's ``ToolNode`` catches a tool's
exception and answers with such a message on a span whose status stays OK.
Pure: no I/O.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ingest.decoded import STATUS_ERROR, SpanRecord
from ingest.semconv.attributes import GENAI_OPERATIONS, NOT_A_STEP, first, json_value, positive_int

__all__ = ["restate", "to_genai"]

_MARKERS = frozenset(
    {
        "traceloop.span.kind",
        "llm.request.type",
        "langsmith.span.kind",
        "ai.operationId",
        "tool_arguments",
        "pydantic_ai.all_messages",
        "gen_ai.prompt.0.role",
        "gen_ai.prompt.0.content",
        "gen_ai.completion.0.role",
        "gen_ai.completion.0.content",
        "gcp.vertex.agent.tool_call_args",
        "gcp.vertex.agent.tool_response",
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.llm_response",
    }
)
_MARKED_NAMES = frozenset({"running tool", "agent run"})
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = frozenset(
    {
        "gen_ai.user.message",
        "gen_ai.system.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
    }
)
_CONTENT_EVENTS_OLD = {
    "gen_ai.content.prompt": "gen_ai.prompt",
    "gen_ai.content.completion": "gen_ai.completion",
}
"""The 2024 conventions' span events (Semantic Kernel, OpenLLMetry's event mode): the
prompt and completion messages as JSON in one attribute each."""
_CONTENT_EVENTS = frozenset(
    {_DETAILS_EVENT, "gen_ai.choice", *_MESSAGE_EVENTS, *_CONTENT_EVENTS_OLD}
)
"""Span events that carry GenAI content (see the module docstring)."""
_LLAMA_INDEX_NOT_CALLS = ("._prepare_chat_with_tools",)
"""LlamaIndex LLM methods that call no model: ``FunctionCallingLLM._prepare_chat_with_tools``
(abstract, so its dispatcher wraps every implementation in a span, ``<Class>.<method>``)
assembles the messages and tools the next ``chat``/``astream_chat`` sends."""
_OI_LANGCHAIN = "openinference.instrumentation.langchain"
_OI_LLAMA_INDEX = "openinference.instrumentation.llama_index"
_OPENINFERENCE_DIALECTS = frozenset({_OI_LANGCHAIN, _OI_LLAMA_INDEX})
"""OpenInference instrumentation scopes whose spans say something :mod:`spans` does not
read as they are (see the module docstring): their run, their tools' outputs."""
_CLAUDE_CODE = "claude_code."
"""The prefix of Claude Code's span names (scope ``com.anthropic.claude_code.tracing``)."""

_MAX_MESSAGES = 256
"""Flattened messages read per span (``gen_ai.prompt.{i}.*``): a bound, not a limit met."""


def to_genai(span: SpanRecord) -> SpanRecord:
    """``span`` with its dialect's attributes restated in the GenAI conventions (the same
    object when it speaks none).

    >>> from ingest.decoded import SpanRecord
    >>> span = SpanRecord(trace_id="t", span_id="s", parent_span_id="p", name="search.tool",
    ...     kind=1, start_ns=0, end_ns=1, attributes={"traceloop.span.kind": "tool",
    ...     "traceloop.entity.name": "search",
    ...     "traceloop.entity.input": '{"input_str": "{\\'q\\': \\'x\\'}", "inputs": null}',
    ...     "traceloop.entity.output": '{"output": "3 hits"}'})
    >>> {k: v for k, v in to_genai(span).attributes.items() if k.startswith("gen_ai")}
    {'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'search', \
'gen_ai.tool.call.arguments': {'q': 'x'}, 'gen_ai.tool.call.result': '3 hits'}
    """
    attrs = span.attributes
    name = span.name
    if (
        _MARKERS.isdisjoint(attrs)
        and name not in _MARKED_NAMES
        and not name.startswith(("Function: ", _CLAUDE_CODE))
        and not name.endswith(_LLAMA_INDEX_NOT_CALLS)
        and span.scope not in _OPENINFERENCE_DIALECTS
        and not any(event.name in _CONTENT_EVENTS for event in span.events)
    ):
        return span
    if name.endswith(_LLAMA_INDEX_NOT_CALLS) and attrs.get("openinference.span.kind") == "LLM":
        # LlamaIndex's dispatcher spans every method of an LLM, and OpenInference calls
        # each such span LLM: the tool-calling models' message assembly is no model call
        return dataclasses.replace(span, attributes={**attrs, "gen_ai.operation.name": NOT_A_STEP})
    out: dict[str, Any] = {}
    failed = _genai_events(span, attrs, out)
    failed |= _openllmetry(span, attrs, out)
    failed |= _langsmith(span, attrs, out)
    failed |= _openinference(span, attrs, out)
    _vercel(span, attrs, out)
    _pydantic_ai(span, attrs, out)
    _adk(span, attrs, out)
    error = _claude_code(span, attrs, out)
    _flattened_messages(attrs, out)
    if not out and not failed and error is None:
        return span
    merged = {**attrs, **out}
    if failed and error is None:
        result = merged.get("gen_ai.tool.call.result")
        error = result if isinstance(result, str) else "tool error"
    if error is not None:
        return _failed(dataclasses.replace(span, attributes=merged), error)
    return dataclasses.replace(span, attributes=merged)


def restate(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    """A batch of spans, each through :func:`to_genai`, with what one span says about
    another folded in: a failed ``claude_code.tool.execution`` fails its parent tool
    span (Claude Code reports the outcome of running a tool on that child). The two are
    exported together (a parent ends after its children, in the same batch); a child
    whose parent is elsewhere still says nothing on its own."""
    batch = [to_genai(span) for span in spans]
    batch = _lift_run_inputs(batch)
    batch = _named_runs(batch)
    batch = _langgraph_tool_arguments(batch)
    outcomes: dict[str, str] = {}
    for span in batch:
        if span.name == "claude_code.tool.execution" and span.parent_span_id:
            error = _execution_error(span)
            if error is not None:
                outcomes[span.parent_span_id] = error
    if not outcomes:
        return batch
    return [
        _failed(span, outcomes[span.span_id])
        if span.span_id in outcomes and span.status_code != STATUS_ERROR
        else span
        for span in batch
    ]


def _lift_run_inputs(batch: list[SpanRecord]) -> list[SpanRecord]:
    """The batch with the input of each span marked as its parent's run (``_PARENT_RUN``)
    given to that parent, where the parent has none of its own."""
    lifted = {
        span.parent_span_id: span.attributes
        for span in batch
        if span.parent_span_id and span.attributes.get(_PARENT_RUN)
    }
    if not lifted:
        return batch
    out = []
    for span in batch:
        given = lifted.get(span.span_id)
        if given is not None:
            add = {
                key: given[key]
                for key in ("gen_ai.input.messages", "gen_ai.system_instructions")
                if key in given and key not in span.attributes
            }
            if add:
                span = dataclasses.replace(span, attributes={**span.attributes, **add})
        out.append(span)
    return out


def _named_runs(batch: list[SpanRecord]) -> list[SpanRecord]:
    """The batch with each OpenInference ``AGENT`` span that names no agent given the
    ``agent.name`` of its first ``AGENT`` child in the batch: the OpenAI Agents SDK's
    trace root (``OpenInferenceTracingProcessor.on_trace_start``: named after the
    workflow, ``Agent workflow``) runs the agent its first agent span names."""
    named: dict[str, tuple[int, str]] = {}
    by_id = {span.span_id: span for span in batch}
    for span in batch:
        name = span.attributes.get("agent.name")
        if (
            span.parent_span_id
            and isinstance(name, str)
            and name
            and span.attributes.get("openinference.span.kind") == "AGENT"
        ):
            runner = _agent_ancestor(span, by_id)
            first = named.get(runner)
            if first is None or span.start_ns < first[0]:
                named[runner] = (span.start_ns, name)
    if not named:
        return batch
    out = []
    for span in batch:
        attrs = span.attributes
        given = named.get(span.span_id)
        if (
            given is not None
            and attrs.get("openinference.span.kind") == "AGENT"
            and not attrs.get("agent.name")
            and not attrs.get("gen_ai.agent.name")
        ):
            span = dataclasses.replace(span, attributes={**attrs, "agent.name": given[1]})
        out.append(span)
    return out


def _langgraph_tool_arguments(batch: list[SpanRecord]) -> list[SpanRecord]:
    """The batch with each LangChain ``TOOL`` span (OpenInference) whose input is not the
    arguments' object given the ``args`` of the tool call its parent LangGraph ``tools``
    task was sent (``input.value``: ``{"tool_call": {"name", "args", "id"}, ...}``):
    LangChain logs a tool of one text argument as that text alone (``"Lisbon"``, not
    ``{"city": "Lisbon"}``). A parent in another batch leaves the bare text."""
    tools = [
        span
        for span in batch
        if span.scope == _OI_LANGCHAIN
        and span.parent_span_id
        and span.attributes.get("openinference.span.kind") == "TOOL"
        and "gen_ai.tool.call.arguments" not in span.attributes
        and not isinstance(json_value(span.attributes.get("input.value")), Mapping)
    ]
    if not tools:
        return batch
    by_id = {span.span_id: span for span in batch}
    given: dict[str, Any] = {}
    for span in tools:
        parent = by_id.get(span.parent_span_id or "")
        sent = json_value(parent.attributes.get("input.value")) if parent else None
        call = sent.get("tool_call") if isinstance(sent, Mapping) else None
        if (
            isinstance(call, Mapping)
            and call.get("name") == span.attributes.get("tool.name", span.name)
            and isinstance(call.get("args"), Mapping)
        ):
            given[span.span_id] = call["args"]
    return [
        dataclasses.replace(
            span, attributes={**span.attributes, "gen_ai.tool.call.arguments": given[span.span_id]}
        )
        if span.span_id in given
        else span
        for span in batch
    ]


def _agent_ancestor(span: SpanRecord, by_id: Mapping[str, SpanRecord]) -> str:
    """The id of ``span``'s nearest ``AGENT`` ancestor in the batch, climbing through the
    ``CHAIN`` spans between (the Agents SDK 0.20 puts a ``CHAIN`` task span between the
    trace's root and its agent), never through a tool (an agent under a tool is a delegated
    run); its parent's id when there is no such ancestor in the batch."""
    parent = span.parent_span_id or ""
    current = by_id.get(parent)
    for _ in range(64):  # a bound on a cyclic or deep tree
        if current is None:
            return parent
        kind = current.attributes.get("openinference.span.kind")
        if kind == "AGENT":
            return current.span_id
        if kind != "CHAIN":
            return parent
        current = by_id.get(current.parent_span_id or "")
    return parent


def _failed(span: SpanRecord, error: str) -> SpanRecord:
    if span.status_code == STATUS_ERROR:
        return span
    return dataclasses.replace(span, status_code=STATUS_ERROR, status_message=error)


# -- the dialects ------------------------------------------------------------------------


def _openllmetry(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    kind = attrs.get("traceloop.span.kind")
    failed = False
    if kind == "tool":
        _operation(out, attrs, "execute_tool")
        tool = _text(attrs.get("traceloop.entity.name")) or span.name.removesuffix(".tool")
        _put(out, attrs, "gen_ai.tool.name", tool)
        entered = _callback_json(attrs, _TOOL_INPUTS, _TOOL_INPUT_KEYS)
        arguments = _tool_input(entered, attrs)
        _put_over_callback(out, attrs, "gen_ai.tool.call.arguments", arguments, _TOOL_INPUT_KEYS)
        ended = _callback_json(attrs, _TOOL_OUTPUTS, _TOOL_OUTPUT_KEYS)
        output = json_value(attrs.get("traceloop.entity.output")) if ended is None else ended
        if isinstance(output, Mapping) and "output" in output:
            output = output["output"]
        result, call_id, failed = _tool_output(output)
        _put_over_callback(out, attrs, "gen_ai.tool.call.result", result, _TOOL_OUTPUT_KEYS)
        given = entered.get("kwargs") if entered is not None else None
        if call_id is None and isinstance(given, Mapping):
            call_id = _text(given.get("tool_call_id"))
        _put(out, attrs, "gen_ai.tool.call.id", call_id)
    elif kind == "agent" or (kind == "workflow" and span.parent_span_id is None):
        _operation(out, attrs, "invoke_agent" if kind == "agent" else "invoke_workflow")
        if kind == "agent":
            _put(out, attrs, "gen_ai.agent.name", _text(attrs.get("traceloop.entity.name")))
        _put_run_input(out, attrs)
    elif (
        kind == "workflow"
        and span.parent_span_id is not None
        and attrs.get("gen_ai.provider.name") == "langgraph"
    ):
        # The root chain of a LangGraph run, parented by OpenLLMetry (>= 0.50, patch.py)
        # to the graph's own ``invoke_agent <graph>`` span, which has no input: one run.
        # Its input goes to that span (:func:`restate`); it is no agent of its own.
        out["gen_ai.operation.name"] = NOT_A_STEP
        out[_PARENT_RUN] = True
        _put_run_input(out, attrs)
    request = attrs.get("llm.request.type")
    if request == "chat" or request == "completion":
        _operation(out, attrs, "chat" if request == "chat" else "text_completion")
    elif request == "embedding" or request == "rerank":
        _operation(out, attrs, "embeddings")
    return failed


_TOOL_INPUTS = ("traceloop.entity.input", "gen_ai.tool.call.arguments")
_TOOL_OUTPUTS = ("traceloop.entity.output", "gen_ai.tool.call.result")
_TOOL_INPUT_KEYS = frozenset({"input_str", "tags", "metadata", "inputs", "kwargs"})
"""The keys of the JSON OpenLLMetry's ``on_tool_start`` writes (``callback_handler.py``):
LangChain's callback arguments, the tool's own arguments only under ``inputs``."""
_TOOL_OUTPUT_KEYS = frozenset({"output", "kwargs"})
"""The keys of the JSON its ``on_tool_end`` writes."""
_PARENT_RUN = "trajwatch.parent_run"
"""Set by :func:`to_genai` on a span that is its parent's run (LangGraph's root chain under
the graph span): :func:`restate` gives its input to the parent."""


def _callback_json(
    attrs: Mapping[str, Any], names: tuple[str, ...], keys: frozenset[str]
) -> Mapping[str, Any] | None:
    """The LangChain callback's arguments as OpenLLMetry writes them (an object of only
    ``keys``, in the first of ``names`` holding one): since 0.50 in the GenAI attributes
    too, where the call's own arguments and result belong."""
    for name in names:
        value = json_value(attrs.get(name))
        if isinstance(value, Mapping) and value and keys.issuperset(value):
            return value
    return None


def _tool_input(entered: Mapping[str, Any] | None, attrs: Mapping[str, Any]) -> Any:
    """A traced tool's arguments: LangChain's ``inputs`` (or ``input_str``, the Python
    ``str()`` of them), a decorated function's ``{"args", "kwargs"}`` as it is."""
    if entered is None:
        return json_value(attrs.get("traceloop.entity.input"))
    inputs = entered.get("inputs")
    if isinstance(inputs, Mapping) and inputs:
        return dict(inputs)
    if "input_str" in entered:
        return _python_literal(entered["input_str"])
    return entered


def _put_over_callback(
    out: dict[str, Any], attrs: Mapping[str, Any], key: str, value: Any, keys: frozenset[str]
) -> None:
    """:func:`_put`, but over a ``key`` that holds the callback's JSON (OpenLLMetry >= 0.50
    puts it in ``gen_ai.tool.call.arguments``/``result``): the call id, the graph's step
    and checkpoint in it would make each call of the same action another one."""
    present = json_value(attrs.get(key))
    if isinstance(present, Mapping) and present and keys.issuperset(present):
        if value is not None and value != "":
            out[key] = value
        return
    _put(out, attrs, key, value)


def _put_run_input(out: dict[str, Any], attrs: Mapping[str, Any]) -> None:
    """A chain run's task and instructions, from the ``inputs`` OpenLLMetry logs for it:
    the first user message, and the system messages the caller passed."""
    entered = json_value(attrs.get("traceloop.entity.input"))
    if isinstance(entered, Mapping) and "inputs" in entered:
        entered = entered["inputs"]
    _put_goal(out, attrs, _user_text(entered))
    system = [
        m["content"]
        for m in _chat_messages(entered)
        if m.get("role") == "system" and isinstance(m.get("content"), str) and m["content"]
    ]
    if system:  # a SystemMessage the caller passed: the run's instructions
        _put(out, attrs, "gen_ai.system_instructions", "\n".join(system))


def _langsmith(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    kind = attrs.get("langsmith.span.kind")
    if kind is None:
        return False
    inputs = json_value(attrs.get("gen_ai.prompt"))
    outputs = json_value(attrs.get("gen_ai.completion"))
    if kind == "tool":
        _operation(out, attrs, "execute_tool")
        _put(out, attrs, "gen_ai.tool.name", span.name)
        if isinstance(inputs, Mapping) and "input" in inputs:
            inputs = inputs["input"]
        _put(out, attrs, "gen_ai.tool.call.arguments", _python_literal(inputs))
        if isinstance(outputs, Mapping) and "output" in outputs:
            outputs = outputs["output"]
        result, call_id, failed = _tool_output(outputs)
        _put(out, attrs, "gen_ai.tool.call.result", result)
        _put(out, attrs, "gen_ai.tool.call.id", call_id)
        return failed
    if kind == "llm":
        messages = _chat_messages(inputs.get("messages") if isinstance(inputs, Mapping) else None)
        _put(out, attrs, "gen_ai.input.messages", messages or None)
        _put_output(out, attrs, _generation_text(outputs))
    elif kind == "chain" and span.parent_span_id is None:
        _operation(out, attrs, "invoke_workflow")
        _put_goal(out, attrs, _user_text(inputs))
    elif kind == "prompt":
        # LangSmith names a prompt-template run's operation ``chat``: it calls no model
        out["gen_ai.operation.name"] = "prompt"
    return False


def _openinference(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    """LangChain/LangGraph's and LlamaIndex's OpenInference spans: the root run, the tools'
    outputs (module docstring). True when a tool's output says it failed."""
    if span.scope not in _OPENINFERENCE_DIALECTS:
        return False
    kind = attrs.get("openinference.span.kind")
    if kind == "CHAIN" and span.parent_span_id is None and _is_run(span, attrs):
        _operation(out, attrs, "invoke_agent")
        return False
    if kind != "TOOL":
        return False
    output = json_value(attrs.get("output.value"))
    if span.scope == _OI_LANGCHAIN:
        result, call_id, failed = _tool_output(output)
        if result is not output:
            _put(out, attrs, "gen_ai.tool.call.result", result)
            _put(out, attrs, "gen_ai.tool.call.id", call_id)
        return failed
    if isinstance(output, Mapping) and {"tool_name", "raw_output"} <= output.keys():
        raw = output["raw_output"]
        _put(out, attrs, "gen_ai.tool.call.result", raw if isinstance(raw, str) else _json(raw))
        return output.get("is_error") is True
    return False


def _is_run(span: SpanRecord, attrs: Mapping[str, Any]) -> bool:
    """A root CHAIN span that is the agent's run: LangGraph's graph, LlamaIndex's
    ``<Agent>.run`` (the callers check the kind and the root)."""
    if span.scope == _OI_LLAMA_INDEX:
        return span.name.endswith(".run")
    metadata = json_value(attrs.get("metadata"))
    return isinstance(metadata, Mapping) and metadata.get("ls_integration") == "langgraph"


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _vercel(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> None:
    operation = attrs.get("ai.operationId")
    if not isinstance(operation, str):
        return
    if operation == "ai.toolCall":
        _operation(out, attrs, "execute_tool")
        _put(out, attrs, "gen_ai.tool.name", _text(attrs.get("ai.toolCall.name")))
        _put(out, attrs, "gen_ai.tool.call.id", _text(attrs.get("ai.toolCall.id")))
        # the v5 pre-releases' names are input/output
        arguments = first(attrs, ("ai.toolCall.args", "ai.toolCall.input"))
        _put(out, attrs, "gen_ai.tool.call.arguments", arguments)
        result = first(attrs, ("ai.toolCall.result", "ai.toolCall.output"))
        _put(out, attrs, "gen_ai.tool.call.result", _unstringified(result))
    elif operation.endswith((".doGenerate", ".doStream")):
        _operation(out, attrs, "chat")
        messages = _chat_messages(json_value(attrs.get("ai.prompt.messages")))
        _put(out, attrs, "gen_ai.input.messages", messages or None)
        _put_output(out, attrs, _text(first(attrs, ("ai.response.text", "ai.result.text"))))
        finish = _text(first(attrs, ("ai.response.finishReason", "ai.finishReason")))
        _put(out, attrs, "gen_ai.response.finish_reasons", [finish] if finish else None)
        _put(out, attrs, "gen_ai.response.id", _text(attrs.get("ai.response.id")))
        model = first(attrs, ("ai.response.model", "ai.model.id"))
        _put(out, attrs, "gen_ai.response.model", _text(model))
        _put(out, attrs, "gen_ai.provider.name", _text(attrs.get("ai.model.provider")))
        tokens_in = first(attrs, ("ai.usage.inputTokens", "ai.usage.promptTokens"))
        tokens_out = first(attrs, ("ai.usage.outputTokens", "ai.usage.completionTokens"))
        _put(out, attrs, "gen_ai.usage.input_tokens", tokens_in)
        _put(out, attrs, "gen_ai.usage.output_tokens", tokens_out)
    elif operation in ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"):
        _operation(out, attrs, "invoke_agent")
        _put(out, attrs, "gen_ai.agent.name", _text(attrs.get("ai.telemetry.functionId")))
        prompt = json_value(attrs.get("ai.prompt"))
        if isinstance(prompt, Mapping):
            _put(out, attrs, "gen_ai.system_instructions", _text(prompt.get("system")))
            goal = prompt.get("prompt")
            if not isinstance(goal, str) or not goal:
                goal = _user_text({"messages": prompt.get("messages")})
            _put_goal(out, attrs, goal)


def _pydantic_ai(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> None:
    if span.name == "running tool" or "tool_arguments" in attrs:
        _operation(out, attrs, "execute_tool")
        _put(out, attrs, "gen_ai.tool.call.arguments", attrs.get("tool_arguments"))
        _put(out, attrs, "gen_ai.tool.call.result", attrs.get("tool_response"))
    elif span.name.startswith("Function: ") and "name" in attrs:
        # the OpenAI Agents SDK's function span, as Logfire exports it
        _operation(out, attrs, "execute_tool")
        _put(out, attrs, "gen_ai.tool.name", _text(attrs.get("name")))
        _put(out, attrs, "gen_ai.tool.call.arguments", attrs.get("input"))
        _put(out, attrs, "gen_ai.tool.call.result", attrs.get("output"))
    elif span.name == "agent run":
        _operation(out, attrs, "invoke_agent")
        _put(out, attrs, "gen_ai.agent.name", _text(attrs.get("agent_name")))
        _put_goal(out, attrs, _text(attrs.get("prompt")))
    messages = attrs.get("pydantic_ai.all_messages")
    if messages is not None:  # the run's messages, OTel-shaped ({role, parts})
        _put(out, attrs, "gen_ai.input.messages", messages)


def _adk(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> None:
    """Google ADK (``gcp.vertex.agent``): a tool's arguments and response in
    ``…tool_call_args``/``…tool_response``; ``call_llm``'s request and response (the
    ``LlmRequest`` ``{model, config, contents}`` and ``LlmResponse`` as JSON) in
    ``…llm_request``/``…llm_response``; ``execute_tool (merged)`` (tool name
    ``(merged tools)``) only repeats the parallel calls it merges."""
    if "gcp.vertex.agent.tool_call_args" in attrs or "gcp.vertex.agent.tool_response" in attrs:
        if attrs.get("gen_ai.tool.name") == "(merged tools)":
            out["gen_ai.operation.name"] = NOT_A_STEP
            return
        arguments = json_value(attrs.get("gcp.vertex.agent.tool_call_args"))
        response = json_value(attrs.get("gcp.vertex.agent.tool_response"))
        # Without content capture ADK (legacy schema, tracing.py ``trace_tool_call``)
        # writes "{}" for both: arguments unknown. With it, "{}" beside a response is a
        # call that took no arguments.
        recorded = response not in ({}, None, "")
        _put(out, attrs, "gen_ai.tool.call.arguments", arguments or ({} if recorded else None))
        # ADK wraps a response that is not a dict as {"result": value}; it writes
        # "<not specified>" when the call had no response event
        if isinstance(response, Mapping) and set(response) == {"result"}:
            response = response["result"]
        if response != "<not specified>":
            _put(out, attrs, "gen_ai.tool.call.result", response or None)
        return
    request = json_value(attrs.get("gcp.vertex.agent.llm_request"))
    if not isinstance(request, Mapping) or not request:
        return
    if attrs.get("gen_ai.operation.name") not in GENAI_OPERATIONS:
        out["gen_ai.operation.name"] = "generate_content"
    contents = request.get("contents")
    messages = [
        {
            "role": "assistant" if c.get("role") == "model" else c.get("role") or "user",
            "content": _parts_text(c.get("parts")) or "",
        }
        for c in (contents if isinstance(contents, list) else [])[:_MAX_MESSAGES]
        if isinstance(c, Mapping)
    ]
    _put(out, attrs, "gen_ai.input.messages", messages or None)
    config = request.get("config")
    if isinstance(config, Mapping):
        _put(out, attrs, "gen_ai.system_instructions", _text(config.get("system_instruction")))
    response = json_value(attrs.get("gcp.vertex.agent.llm_response"))
    if isinstance(response, Mapping):
        content = response.get("content")
        if isinstance(content, Mapping):
            _put_output(out, attrs, _parts_text(content.get("parts")))
        _put(out, attrs, "gen_ai.response.model", _text(response.get("model_version")))
        finish = _text(response.get("finish_reason"))
        _put(out, attrs, "gen_ai.response.finish_reasons", [finish.lower()] if finish else None)


def _genai_events(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    """GenAI content in span events (Strands Agents; the conventions' details event), as
    attributes; True when the span is a tool that reports its own failure
    (``gen_ai.tool.status: error``) on an OK status."""
    events = [e for e in span.events if e.name in _CONTENT_EVENTS][:_MAX_MESSAGES]
    if not events:
        return False
    tool = attrs.get("gen_ai.operation.name") == "execute_tool"
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    finish: str | None = None
    for event in events:
        given = event.attributes
        if event.name in _CONTENT_EVENTS_OLD:
            key = _CONTENT_EVENTS_OLD[event.name]
            _put(out, attrs, key, given.get(key))
        elif event.name == _DETAILS_EVENT:
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                _put(out, attrs, key, json_value(given.get(key)) or None)
            _put(out, attrs, "gen_ai.system_instructions", given.get("gen_ai.system_instructions"))
        elif event.name == "gen_ai.choice":
            outputs.append({"role": "assistant", "content": _blocks_text(given.get("message"))})
            finish = finish or _text(given.get("finish_reason"))
        else:  # gen_ai.{role}.message
            role = event.name.split(".")[1]
            content = given.get("content")
            inputs.append({"role": role, "content": _blocks_text(content), "raw": content})
    if tool:
        calls = [m.get("raw") for m in inputs if m["role"] == "tool"]
        _put(
            out,
            attrs,
            "gen_ai.tool.call.arguments",
            _tool_part(out, "gen_ai.input.messages", "tool_call", "arguments")
            or (json_value(calls[0]) if calls else None),
        )
        response = _tool_part(out, "gen_ai.output.messages", "tool_call_response", "response")
        if response is None and outputs:
            response = outputs[0]["content"]
        _put(out, attrs, "gen_ai.tool.call.result", _blocks_text(response))
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            out.pop(key, None)  # a tool's call and response, not a conversation
        return attrs.get("gen_ai.tool.status") == "error"
    messages = [{"role": m["role"], "content": m["content"]} for m in inputs]
    _put(out, attrs, "gen_ai.input.messages", messages or None)
    _put(out, attrs, "gen_ai.output.messages", outputs or None)
    _put(out, attrs, "gen_ai.response.finish_reasons", [finish] if finish else None)
    _put(out, attrs, "gen_ai.system_instructions", _text(attrs.get("gen_ai.agent.system_prompt")))
    return False


def _tool_part(out: Mapping[str, Any], key: str, kind: str, field: str) -> Any:
    """The ``field`` of the first ``kind`` part of the messages at ``out[key]``."""
    messages = out.get(key)
    for message in messages if isinstance(messages, list) else []:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, Mapping) and part.get("type") == kind and field in part:
                return part[field]
    return None


def _blocks_text(value: Any) -> Any:
    """Content as Strands logs it (the JSON of ``[{"text": …}, {"toolUse": …}]``) as its
    text; any other value as it is."""
    blocks = json_value(value)
    if isinstance(blocks, list) and blocks and all(isinstance(b, Mapping) for b in blocks):
        texts = [b["text"] for b in blocks if isinstance(b.get("text"), str)]
        if texts:
            return "\n".join(texts)
    return blocks


def _claude_code(span: SpanRecord, attrs: Mapping[str, Any], out: dict[str, Any]) -> str | None:
    """Claude Code's own spans (``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA``), which carry no
    GenAI operation: ``claude_code.interaction`` (one user turn: ``user_prompt``),
    ``claude_code.llm_request`` (``model``, ``input_tokens``, ``cache_read_tokens``,
    ``cache_creation_tokens``, ``output_tokens``, ``stop_reason``, ``success``/``error``),
    ``claude_code.tool`` (``tool_name``, ``tool_use_id``, the input as ``tool_input`` or
    as ``full_command``/``file_path``, the output in a ``tool.output`` event) and its
    children ``claude_code.tool.execution`` (``success``/``error``, folded into the tool
    by :func:`restate`) and ``claude_code.tool.blocked_on_user`` (the permission wait).
    The session is ``session.id``, on every span. Returns the failure the span reports."""
    name = span.name
    if not name.startswith(_CLAUDE_CODE):
        return None
    if name == "claude_code.interaction":
        _operation(out, attrs, "invoke_agent")
        _put_goal(out, attrs, _unredacted(attrs.get("user_prompt")))
        return None
    if name == "claude_code.llm_request":
        _operation(out, attrs, "chat")
        _put(out, attrs, "gen_ai.request.model", _text(attrs.get("model")))
        # the whole prompt, as ingest.formats.claude_code counts it for transcripts: the
        # uncached input is often a handful of tokens beside 80k read from the cache
        prompt = sum(
            positive_int(attrs.get(k))
            for k in ("input_tokens", "cache_read_tokens", "cache_creation_tokens")
        )
        _put(out, attrs, "gen_ai.usage.input_tokens", prompt or None)
        _put(out, attrs, "gen_ai.usage.output_tokens", attrs.get("output_tokens"))
        stop = _text(attrs.get("stop_reason"))
        _put(out, attrs, "gen_ai.response.finish_reasons", [stop] if stop else None)
        return _outcome_error(attrs)
    if name == "claude_code.tool":
        _operation(out, attrs, "execute_tool")
        _put(out, attrs, "gen_ai.tool.name", _text(attrs.get("tool_name")))
        _put(out, attrs, "gen_ai.tool.call.id", _text(attrs.get("tool_use_id")))
        _put(out, attrs, "gen_ai.tool.call.arguments", _claude_tool_input(attrs))
        _put(out, attrs, "gen_ai.tool.call.result", _claude_tool_output(span))
        return _outcome_error(attrs)
    if name in ("claude_code.tool.execution", "claude_code.tool.blocked_on_user"):
        out["gen_ai.operation.name"] = NOT_A_STEP
    return None


def _claude_tool_input(attrs: Mapping[str, Any]) -> Any:
    entered = json_value(_unredacted(attrs.get("tool_input")))
    if entered:
        return entered
    command = _unredacted(attrs.get("full_command"))
    if command:
        return {"command": command}
    path = _unredacted(attrs.get("file_path"))
    return {"file_path": path} if path else None


def _claude_tool_output(span: SpanRecord) -> Any:
    for event in span.events:
        if event.name == "tool.output":
            found = first(event.attributes, ("output", "diff", "content"))
            if found is not None:
                return found
    return _unredacted(first(span.attributes, ("tool_output", "tool_result")))


def _outcome_error(attrs: Mapping[str, Any]) -> str | None:
    """The error of a Claude Code span whose ``success`` is false (else None)."""
    if attrs.get("success") is not False and attrs.get("success") != "false":
        return None
    return _text(attrs.get("error")) or "failed"


def _execution_error(span: SpanRecord) -> str | None:
    if span.status_code == STATUS_ERROR:
        return span.status_message or _text(span.attributes.get("error")) or "failed"
    return _outcome_error(span.attributes)


def _unredacted(value: Any) -> Any:
    """Claude Code writes ``<REDACTED>`` where content logging is off: no content."""
    return None if value == "<REDACTED>" else value


def _flattened_messages(attrs: Mapping[str, Any], out: dict[str, Any]) -> None:
    """OpenLLMetry's ``gen_ai.prompt.{i}.role``/``content`` and
    ``gen_ai.completion.{i}.content``/``finish_reason`` as message lists."""
    prompts = []
    for i in range(_MAX_MESSAGES):
        content = _content(attrs, f"gen_ai.prompt.{i}")
        role = _text(attrs.get(f"gen_ai.prompt.{i}.role"))
        if content is None and role is None:
            break
        prompts.append({"role": role or "user", "content": content or ""})
    if prompts:
        _put(out, attrs, "gen_ai.input.messages", prompts)
    completions, reasons = [], []
    for i in range(_MAX_MESSAGES):
        content = _content(attrs, f"gen_ai.completion.{i}")
        reason = _text(attrs.get(f"gen_ai.completion.{i}.finish_reason"))
        if content is None and reason is None and f"gen_ai.completion.{i}.role" not in attrs:
            break
        completions.append({"role": "assistant", "content": content or ""})
        if reason:
            reasons.append(reason)
    if completions:
        _put(out, attrs, "gen_ai.output.messages", completions)
    if reasons:
        _put(out, attrs, "gen_ai.response.finish_reasons", reasons)


def _content(attrs: Mapping[str, Any], prefix: str) -> str | None:
    content = attrs.get(f"{prefix}.content")
    if content is None:
        return None
    return content if isinstance(content, str) else json.dumps(content, default=str)


# -- shared readers -----------------------------------------------------------------------


def _tool_output(value: Any) -> tuple[Any, str | None, bool]:
    """(result, call id, failed) of a tool's output: a LangChain ``ToolMessage`` (plain
    or serialised as ``{"lc": 1, "type": "constructor", "kwargs": {...}}``) gives its
    content, ``tool_call_id`` and ``status``; anything else is the result itself."""
    message = _langchain_message(value)
    if message is None or message[0] != "tool":
        return value, None, False
    _, fields = message
    call_id = _text(fields.get("tool_call_id"))
    return fields.get("content"), call_id, fields.get("status") == "error"


_LANGCHAIN_ROLES = {
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "user": "user",
    "assistant": "assistant",
}


def _langchain_message(value: Any) -> tuple[str, Mapping[str, Any]] | None:
    """(role, fields) of a LangChain message: serialised (``{"lc", "id": [..., "AIMessage"],
    "kwargs"}``), as ``message.dict()`` (``{"type": "ai", "content", ...}``), or None."""
    if not isinstance(value, Mapping):
        return None
    if value.get("lc") is not None and isinstance(value.get("id"), list) and value["id"]:
        role = _LANGCHAIN_ROLES.get(str(value["id"][-1]))
        fields = value.get("kwargs")
        if role and isinstance(fields, Mapping):
            return role, fields
        return None
    kind = value.get("type")
    if (
        isinstance(kind, str)
        and kind in _LANGCHAIN_ROLES
        and "content" in value
        and "role" not in value
    ):
        return _LANGCHAIN_ROLES[kind], value
    data = value.get("data")  # messages_to_dict: {"type": "tool", "data": {content, ...}}
    if (
        isinstance(kind, str)
        and kind in _LANGCHAIN_ROLES
        and isinstance(data, Mapping)
        and "content" in data
        and set(value) == {"type", "data"}
    ):
        return _LANGCHAIN_ROLES[kind], data
    return None


def _chat_messages(value: Any) -> list[dict[str, Any]]:
    """Messages in the shapes frameworks log them (``{role, content}`` dicts, LangChain
    messages, ``("user", text)`` pairs, one level of batch nesting) as ``{role, content}``
    dicts, in order; what is not a message is left out."""
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        return []
    if value and all(isinstance(v, list) and not _is_pair(v) for v in value):
        value = [m for batch in value for m in batch]  # LangChain: one list per prompt
    messages: list[dict[str, Any]] = []
    for item in value[:_MAX_MESSAGES]:
        if isinstance(item, Mapping) and isinstance(item.get("role"), str):
            messages.append(dict(item))
        elif _is_pair(item):
            messages.append({"role": _LANGCHAIN_ROLES.get(item[0], item[0]), "content": item[1]})
        else:
            found = _langchain_message(item)
            if found is not None:
                messages.append({"role": found[0], "content": found[1].get("content")})
    return messages


def _is_pair(item: Any) -> bool:
    return (
        isinstance(item, list | tuple)
        and len(item) == 2
        and isinstance(item[0], str)
        and item[0] in _LANGCHAIN_ROLES
        and isinstance(item[1], str)
    )


_GOAL_KEYS = ("input", "question", "query", "task", "goal", "prompt", "objective", "topic")


def _user_text(value: Any) -> str | None:
    """The task a run was given: the first user message of its messages, else a string
    input, else the first of the usual input keys, else a decorated function's first
    string argument."""
    if isinstance(value, str):
        return value or None
    for message in _chat_messages(value):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else _parts_text(content)
            if text:
                return text
    if isinstance(value, Mapping):
        for key in _GOAL_KEYS:
            found = value.get(key)
            if isinstance(found, str) and found:
                return found
        args = value.get("args")
        if isinstance(args, list):
            return next((a for a in args if isinstance(a, str) and a), None)
    return None


def _parts_text(content: Any) -> str | None:
    if not isinstance(content, list):
        return None
    texts = [p.get("text") or p.get("content") for p in content if isinstance(p, Mapping)]
    return "\n".join(t for t in texts if isinstance(t, str)) or None


def _generation_text(outputs: Any) -> str | None:
    """The text of a LangChain ``LLMResult`` (``{"generations": [[{"text", "message"}]]}``)."""
    if not isinstance(outputs, Mapping):
        return None
    generations = outputs.get("generations")
    while isinstance(generations, list) and generations and isinstance(generations[0], list):
        generations = generations[0]
    if not isinstance(generations, list) or not generations:
        return None
    first = generations[0]
    if not isinstance(first, Mapping):
        return None
    text = first.get("text")
    if isinstance(text, str) and text:
        return text
    found = _langchain_message(first.get("message"))
    content = found[1].get("content") if found else None
    return content if isinstance(content, str) and content else None


def _unstringified(value: Any) -> Any:
    """The AI SDK records a tool's result as ``JSON.stringify(result)``: a text result
    arrives quoted. Its text, unquoted; an object or array stays the JSON it came as."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == '"' == value[-1]:
        try:
            text = json.loads(value)
        except (ValueError, RecursionError):
            return value
        return text if isinstance(text, str) else value
    return value


def _python_literal(value: Any) -> Any:
    """LangChain logs a tool's input as ``str(dict)``: a Python literal, read safely
    (JSON first, then :func:`ast.literal_eval`); any other text is kept as it is."""
    if not isinstance(value, str):
        return value
    stripped = value.strip()
    if stripped[:1] not in ("{", "["):
        return value
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _put(out: dict[str, Any], attrs: Mapping[str, Any], key: str, value: Any) -> None:
    """Set ``key`` unless the span has it already or ``value`` is empty."""
    if value is None or value == "" or key in attrs or key in out:
        return
    out[key] = value


def _put_goal(out: dict[str, Any], attrs: Mapping[str, Any], goal: str | None) -> None:
    if goal:
        _put(out, attrs, "gen_ai.input.messages", [{"role": "user", "content": goal}])


def _put_output(out: dict[str, Any], attrs: Mapping[str, Any], text: str | None) -> None:
    if text:
        _put(out, attrs, "gen_ai.output.messages", [{"role": "assistant", "content": text}])


def _operation(out: dict[str, Any], attrs: Mapping[str, Any], operation: str) -> None:
    """Name the span's operation unless it already has a GenAI one."""
    if (
        attrs.get("gen_ai.operation.name") not in GENAI_OPERATIONS
        and "gen_ai.operation.name" not in out
    ):
        out["gen_ai.operation.name"] = operation
