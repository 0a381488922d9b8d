"""A CodeAct step span → the tool calls its code made, each counted once.

smolagents' ``CodeAgent``, traced by OpenInference, records one ``Step N`` CHAIN span
per step: under it the model call whose output holds the code, a TOOL span for each
tool the code called through the instrumented ``Tool.__call__`` (``final_answer``,
``inspect_file_as_text``, …) and an AGENT span for each managed agent it called; the
step's ``output.value`` is the observation (``Execution logs:`` … ``Last output from
code snippet:`` …) and a failed execution fails the span with smolagents' "Code
execution failed at line '…' due to: …". The pipeline saw the model call and the
traced calls only: a step that computed did nothing visible, a failed one left an
``error`` step. :func:`code_step_drafts` reads the code (:mod:`features.calls.codeact`) and
makes:

- nothing for a call that has its own span under the step: a TOOL span (matched in
  order by tool name) is its call and result; an AGENT span (paired in order with a
  call of no traced tool name: a managed agent) is the sub-agent's start and steps;
- a ``tool_call``/``tool_result`` pair for each other action: a call to a tool that
  left no span, or the block as one ``python`` action when it called no tool (unless
  it only printed its own string literals: that restates the model's text, it is no
  action, and counting it as one would make it look like something tried). The
  observation is the result of the step's last action (the execution's output belongs
  to the whole block);
- a failure is the result of the statement smolagents names: of its call, or of the
  block as a ``python`` action when no failed call of that statement carries it; the
  calls after it did not run and are not made.

Step ids are stable: ``<trace>:<step span>:code<i>:call``/``:result`` (``block<i>`` for
a block run as a whole); every step's ``source_ref`` is the step span, for evidence.
Pure, but for :class:`CodeMemory`: the bounded memory of the children a step span will
need when they came in earlier batches, and of the steps mapped already, so that a
traced child read after its step (a later batch, another partition) revises the step's
drafts to those the step would have had with the child before it (:class:`CodeStep`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from features.calls.actions import tool_call_fields, tool_result_fields
from features.calls.codeact import (
    CodeAction,
    block_action,
    code_actions,
    execution_failure,
    exit_failed,
    failed_position,
    restates_code,
)
from ingest.decoded import STATUS_ERROR, Draft, SpanRecord
from models.records import Step, StepKind

__all__ = [
    "Child",
    "CodeMemory",
    "CodeStep",
    "ModelFacts",
    "by_start",
    "code_step_drafts",
    "is_code_step",
    "tagged_action_drafts",
]

MakeStep = Callable[..., Step]
"""``(span, kind, ts, **fields) → Step``: :func:`ingest.semconv.spans._step`."""


@dataclass(frozen=True, slots=True)
class Child:
    """A TOOL (``tool`` set) or AGENT (``tool`` None) span directly under the step; the
    step's children are matched with its code's calls in the order they started."""

    span_id: str
    tool: str | None
    failed: bool = False
    start_ns: int = 0


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What a step needs of its model call: when it ended, its output, the tools its
    system prompt lists."""

    end_ns: int
    output: str
    tools: frozenset[str]


@dataclass(frozen=True, slots=True)
class CodeStep:
    """What :func:`code_step_drafts` reads of a step mapped already, kept to map it again
    with a traced child (or its model call) read after it: the step span without what the
    drafts do not read (its ids, times, status and agent name: :meth:`slim`), its model
    call (None: not read yet), the tools its agent lists, the children known, its
    observation and error, and the drafts' base."""

    span: SpanRecord
    model: ModelFacts | None
    tools: frozenset[str]
    children: tuple[Child, ...]
    observation: str | None
    error: str | None
    base: Mapping[str, Any]

    @staticmethod
    def slim(span: SpanRecord, keep: Sequence[str]) -> SpanRecord:
        """``span`` with only the attributes ``keep`` names and its ``service.name``."""
        attributes = {key: span.attributes[key] for key in keep if key in span.attributes}
        service = span.resource.get("service.name")
        resource = {"service.name": service} if service is not None else {}
        return replace(span, attributes=attributes, events=(), resource=resource)

    def with_child(self, child: Child) -> CodeStep | None:
        """This step with ``child`` among its children; None when it is known already
        (or the step has :attr:`CodeMemory.MAX_CHILDREN`)."""
        if len(self.children) >= CodeMemory.MAX_CHILDREN or any(
            c.span_id == child.span_id for c in self.children
        ):
            return None
        return replace(self, children=by_start((*self.children, child)))

    def with_model(self, model: ModelFacts) -> CodeStep | None:
        """This step with its model call; None when it had one."""
        return replace(self, model=model) if self.model is None else None

    def drafts(self, make_step: MakeStep) -> list[Draft]:
        """:func:`code_step_drafts` of this step (none without its model call)."""
        if self.model is None:
            return []
        return code_step_drafts(
            self.span,
            model_output=self.model.output,
            model_end_ns=self.model.end_ns,
            tools=self.model.tools | self.tools,
            children=self.children,
            observation=self.observation,
            error=self.error,
            make_step=make_step,
            base=self.base,
        )


def by_start(children: Sequence[Child]) -> tuple[Child, ...]:
    """``children`` in the order they started (then by span id): the order their calls
    are matched in, whatever order they were read in."""
    return tuple(sorted(children, key=lambda c: (c.start_ns, c.span_id)))


Mapped = tuple[CodeStep, tuple[tuple[str, Step], ...]]
"""A step mapped already, with its drafts' ``(fallback id, step)``."""


class CodeMemory:
    """The model calls and traced calls of steps whose span has not arrived yet, bounded.

    A step span ends after its children, and an exporter sends spans as they end: with
    OpenTelemetry's ``SimpleSpanProcessor`` (smolagents' documented setup) each span is
    a request of its own, with the batch processor a step that ran longer than its
    schedule delay is split. So the model call and the tool spans under a step usually
    come before the step, in other batches. They are kept here per parent span (the
    ``max_parents`` most recent parents, ``MAX_CHILDREN`` children each) until their
    step arrives and takes them.

    A traced child can also come after its step (a later batch, another partition, or
    later than the lateness window). So the ``max_parents`` most recent steps mapped are
    kept too (:meth:`mapped`, :meth:`revise`): a child of one maps the step again with
    it, and the drafts it made that the step no longer makes are *retracted*
    (:meth:`take_retracted`: the ordering stage drops those it holds, the pipeline
    deletes those it stored and judges the session again when it settles). In-memory
    only; a restart forgets all of it (a step whose children came before the restart
    shows no code actions, one whose child comes after it keeps the calls it inferred)."""

    MAX_CHILDREN = 64
    MAX_OUTPUT_CHARS = 65_536

    def __init__(self, max_parents: int = 4096) -> None:
        self.max_parents = max_parents
        self._models: OrderedDict[str, ModelFacts] = OrderedDict()
        self._children: OrderedDict[str, list[Child]] = OrderedDict()
        self._steps: OrderedDict[str, Mapped] = OrderedDict()
        self._retracted: list[str] = []

    def remember_model(self, parent: str, facts: ModelFacts) -> None:
        self._models[parent] = ModelFacts(
            facts.end_ns, facts.output[: self.MAX_OUTPUT_CHARS], facts.tools
        )
        self._models.move_to_end(parent)
        while len(self._models) > self.max_parents:
            self._models.popitem(last=False)

    def remember_child(self, parent: str, child: Child) -> None:
        found = self._children.setdefault(parent, [])
        self._children.move_to_end(parent)
        if len(found) < self.MAX_CHILDREN and all(c.span_id != child.span_id for c in found):
            found.append(child)
        while len(self._children) > self.max_parents:
            self._children.popitem(last=False)

    def take(self, step: str) -> tuple[ModelFacts | None, list[Child]]:
        """The model call and children remembered for span ``step``, forgotten here."""
        return self._models.pop(step, None), self._children.pop(step, [])

    def mapped(self, step: str) -> CodeStep | None:
        """Span ``step`` as it was mapped, if it is among the steps remembered."""
        found = self._steps.get(step)
        return found[0] if found is not None else None

    def revise(self, code: CodeStep, drafts: Sequence[Draft]) -> list[Draft]:
        """Remember ``code`` mapped to ``drafts``; returns those of them it had not made
        before (all, for a step not mapped yet), and keeps the ids of the drafts it made
        before and makes no more, or makes otherwise, for :meth:`take_retracted`."""
        made = tuple((draft.fallback_id, draft.step) for draft in drafts)
        before = self._steps.get(code.span.span_id)
        self._steps[code.span.span_id] = (code, made)
        self._steps.move_to_end(code.span.span_id)
        while len(self._steps) > self.max_parents:
            self._steps.popitem(last=False)
        if before is None:
            return list(drafts)
        old, new = dict(before[1]), dict(made)
        self._retracted.extend(i for i, step in old.items() if new.get(i) != step)
        return [draft for draft in drafts if old.get(draft.fallback_id) != draft.step]

    def makes(self, draft: Draft) -> bool:
        """Whether ``draft`` is among those its step (``draft.span_id``) makes now, as
        last mapped (a step mapped twice in one batch: the first mapping's are not)."""
        found = self._steps.get(draft.span_id or "")
        return found is not None and (draft.fallback_id, draft.step) in found[1]

    def take_retracted(self) -> list[str]:
        """The ids of the drafts retracted since the last call (see the class)."""
        retracted, self._retracted = self._retracted, []
        return retracted


def is_code_step(span: SpanRecord) -> bool:
    """smolagents' step span as OpenInference names it: a CHAIN span ``Step <n>``."""
    kind = span.attributes.get("openinference.span.kind")
    name = span.name
    return (
        isinstance(kind, str)
        and kind.upper() == "CHAIN"
        and name.startswith("Step ")
        and name[5:].isdigit()
    )


def code_step_drafts(
    step: SpanRecord,
    *,
    model_output: str | None,
    model_end_ns: int,
    tools: frozenset[str],
    children: Sequence[Child],
    observation: str | None,
    error: str | None,
    make_step: MakeStep,
    base: Mapping[str, Any],
) -> list[Draft]:
    """The drafts of the actions of one step's code that no span of their own records
    (see the module doc); empty when the output holds no code or smolagents failed
    before running it (a parsing or generation error)."""
    if not model_output:
        return []
    failed = step.status_code == STATUS_ERROR
    if failed and "Code execution failed" not in (error or ""):
        return []  # the code never ran: the model call or the parsing failed
    known = tools | {c.tool for c in children if c.tool}
    actions = [a for a in code_actions(model_output, tools=known) if a.kind == "tool"]
    failure = execution_failure(error) if failed else None
    at = failed_position(model_output, failure) if failure else None
    tools_left = [c for c in children if c.tool]
    traced_names = {c.tool for c in tools_left}
    agents_left = [c for c in children if not c.tool]
    emitted: list[tuple[str, CodeAction, bool]] = []  # (id suffix, action, failed)
    carried = failure is None  # has an action (emitted or traced) the failure?
    traced_any = False
    for index, action in enumerate(actions):
        where = (action.block, action.statement)
        if at is not None and where > at:
            break  # the interpreter stopped at the failed statement
        traced = next((c for c in tools_left if c.tool == action.name), None)
        if traced is None and agents_left and action.name not in traced_names:
            traced = agents_left[0]
        if traced is not None:
            (tools_left if traced.tool else agents_left).remove(traced)
            traced_any = True
            carried = carried or (where == at and traced.failed)
            continue
        if failure is not None and at is None:
            continue  # whether a call without a span ran before the failure is unknown
        emitted.append((f"code{index}", action, where == at))
        carried = carried or where == at
    whole = None
    if (not emitted and not traced_any) or not carried:
        block = at[0] if at is not None else 0
        whole = block_action(model_output, block)
    if whole is not None and (
        failure is not None or not restates_code(whole.arguments.get("code", ""), observation)
    ):
        emitted.append((f"block{whole.block}", whole, failure is not None))
    if not emitted:
        return []
    ref = f"{step.trace_id}:{step.span_id}"
    drafts: list[Draft] = []
    for position, (suffix, action, action_failed) in enumerate(emitted):
        last = position == len(emitted) - 1
        fields = tool_call_fields(action.name, action.arguments)
        detail = {**fields.pop("detail"), "code_action": action.kind}
        # calls in code order after the model call; the execution ends with the step
        call_ts = model_end_ns + 2 * position
        result_ts = step.end_ns if last else call_ts + 1
        text = failure.message if action_failed and failure else (observation if last else None)
        call = make_step(step, StepKind.TOOL_CALL, call_ts, detail=detail, **fields)
        result = make_step(
            step,
            StepKind.TOOL_RESULT,
            max(result_ts, call_ts),
            tool=action.name,
            detail={"code_action": action.kind},
            **tool_result_fields(text, failed=action_failed),
        )
        drafts.append(Draft(step=call, fallback_id=f"{ref}:{suffix}:call", **base))
        drafts.append(Draft(step=result, fallback_id=f"{ref}:{suffix}:result", **base))
    return drafts


def tagged_action_drafts(
    model: SpanRecord,
    *,
    model_output: str | None,
    observation: str | None,
    observed_ns: int,
    make_step: MakeStep,
    base: Mapping[str, Any],
) -> list[Draft]:
    """The action of a model call written in OpenHands' CodeAct tags (``<execute_bash>``,
    ``<execute_ipython>``, ``<execute_browse>``): OpenHands runs the first block of a
    response, so one call, at the model call's end. ``observation`` is what the next
    model call's input holds after this response (OpenHands sends the observation as
    the next message, seen at ``observed_ns``), or None when no later model call of the
    batch shows it; a command whose observation reports a non-zero exit code failed."""
    if not model_output or "<execute_" not in model_output:
        return []
    actions = code_actions(model_output)
    if not actions:
        return []
    action = actions[0]
    if action.kind == "tool" or action.block != 0:
        action = block_action(model_output, 0) or action
    ref = f"{model.trace_id}:{model.span_id}"
    fields = tool_call_fields(action.name, action.arguments)
    detail = {**fields.pop("detail"), "code_action": action.kind}
    call = make_step(model, StepKind.TOOL_CALL, model.end_ns, detail=detail, **fields)
    drafts = [Draft(step=call, fallback_id=f"{ref}:code0:call", **base)]
    if observation is not None:
        failed = action.kind == "bash" and exit_failed(observation)
        result = make_step(
            model,
            StepKind.TOOL_RESULT,
            max(observed_ns, model.end_ns),
            tool=action.name,
            detail={"code_action": action.kind},
            **tool_result_fields(observation, failed=failed),
        )
        drafts.append(Draft(step=result, fallback_id=f"{ref}:code0:result", **base))
    return drafts
