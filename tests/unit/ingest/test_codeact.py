"""Code actions: CodeAct agents' code read into tool calls (features/calls/codeact.py) and
smolagents' step spans mapped to them, counted once (ingest/semconv/codeact.py)."""

from __future__ import annotations

import json
import lzma
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import Status, StatusCode

from features.calls.codeact import (
    MAX_CODE_CHARS,
    Failure,
    code_actions,
    code_blocks,
    execution_failure,
    exit_failed,
    failed_position,
    prompt_tools,
    restates_code,
)
from ingest.decoded import Draft
from ingest.formats.trail import decode_trail
from ingest.pipeline.engine import Pipeline
from ingest.semconv.spans import spans_to_drafts
from models.records import StepKind
from models.store import Store
from tests.support.paths import CORPUS
from tests.unit.ingest.test_dialects import Run
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

GAIA = CORPUS / "trail" / "traces" / "gaia"
TOOLS = {"web_search", "visit_page", "inspect_file_as_text", "final_answer", "search_agent"}
SYSTEM = "You only have access to these tools:\n" + "".join(
    f"- {name}: does {name}.\n    Takes inputs: {{}}\n" for name in sorted(TOOLS)
)


def smol(code: str, thought: str = "Thought: go.") -> str:
    """A smolagents CodeAgent model output around ``code`` (the pre-1.17 format)."""
    return f"{thought}\nCode:\n```py\n{code}\n```<end_code>"


# -- the parser -----------------------------------------------------------------------


def test_a_block_with_several_tool_calls_gives_them_in_order_with_their_arguments() -> None:
    code = (
        'query = ("equine veterinarian "\n         "LibreTexts")\n'
        "hits = web_search(query=query)\n"
        "print(hits)\n"
        'page = visit_page("https://chem.libretexts.org/x", 2)\n'
        "final_answer(answer=page[:10], sources=[1, (2, 3)])"
    )
    actions = code_actions(smol(code), tools=TOOLS)
    assert [(a.name, a.kind) for a in actions] == [
        ("web_search", "tool"),
        ("visit_page", "tool"),
        ("final_answer", "tool"),
    ]
    assert actions[0].arguments == {"query": "equine veterinarian LibreTexts"}
    assert actions[1].arguments == {"args": ["https://chem.libretexts.org/x", 2]}
    # not a literal: its source text; a tuple literal: a JSON list
    assert actions[2].arguments == {"answer": "page[:10]", "sources": [1, [2, 3]]}
    assert [a.statement for a in actions] == [1, 3, 4]


def test_final_answer_alone_and_the_code_tag_format() -> None:
    (action,) = code_actions("Thought: done.\n<code>\nfinal_answer(42)\n</code>", tools=TOOLS)
    assert (action.name, action.arguments) == ("final_answer", {"args": [42]})


def test_computation_without_a_tool_call_is_one_python_action() -> None:
    code = "import math\nx = math.sqrt(2) * 10\nprint(round(x, 3))"
    (action,) = code_actions(smol(code), tools=TOOLS)
    assert (action.name, action.kind, action.arguments) == ("python", "python", {"code": code})


def test_without_a_tool_list_free_names_are_the_tools() -> None:
    code = (
        "from bs4 import BeautifulSoup\n"
        "def dfs(n):\n    return n\n"
        "soup = BeautifulSoup('<p/>', 'html.parser')\n"
        "print(len(str(dfs(3))))\n"
        "lookup_census(year=2011)\n"
    )
    assert [(a.name, a.arguments) for a in code_actions(smol(code))] == [
        ("lookup_census", {"year": 2011})
    ]


def test_a_syntax_error_is_one_python_action_not_a_crash() -> None:
    code = "print('unterminated)\nweb_search(query='x')"
    (action,) = code_actions(smol(code), tools=TOOLS)
    assert (action.name, action.arguments) == ("python", {"code": code})


def test_huge_and_deeply_nested_code_is_bounded() -> None:
    huge = "x = 1\n" * (MAX_CODE_CHARS // 3) + "web_search(query='x')"
    started = time.perf_counter()
    (action,) = code_actions(smol(huge), tools=TOOLS)
    assert action.name == "python" and len(action.arguments["code"]) == MAX_CODE_CHARS
    deep = "y = " + "[" * 500 + "]" * 500
    (nested,) = code_actions(smol(deep), tools=TOOLS)
    assert nested.name == "python"
    many = "\n".join(f"web_search(query='q{i}')" for i in range(100))
    assert len(code_actions(smol(many), tools=TOOLS)) == 32
    assert time.perf_counter() - started < 1.0


def test_openhands_tags() -> None:
    text = (
        "Let me look.\n<execute_bash>\ncd /workspace && pytest -q\n</execute_bash>\n"
        "<execute_browse>Find the docs of numpy.clip</execute_browse>"
    )
    assert code_blocks(text) == [
        ("bash", "cd /workspace && pytest -q"),
        ("browse", "Find the docs of numpy.clip"),
    ]
    bash, browse = code_actions(text)
    assert (bash.name, bash.arguments) == ("bash", {"command": "cd /workspace && pytest -q"})
    assert (browse.name, browse.arguments) == ("browse", {"task": "Find the docs of numpy.clip"})
    # OpenHands closes an unclosed tag; ipython code is Python
    (cell,) = code_actions("<execute_ipython>\nresult = 2 + 2\nprint(result)")
    assert (cell.name, cell.arguments) == ("python", {"code": "result = 2 + 2\nprint(result)"})
    assert exit_failed("E   assert 1 == 2\n[Command finished with exit code 1]")
    assert not exit_failed("3 passed\n[Command finished with exit code 0]")
    assert not exit_failed("no footer")


def test_a_failure_names_its_statement() -> None:
    code = 'a = 1\ncontent = inspect_file_as_text(\n    file_path="f.txt"\n)\nprint(content)'
    error = (
        "AgentExecutionError: Code execution failed at line 'content = inspect_file_as_text("
        '\n    file_path="f.txt"\n)\' due to: FileConversionException: no'
    )
    failure = execution_failure(error)
    assert failure is not None and failure.statement.startswith("content = ")
    assert failed_position(smol(code), failure) == (0, 1)
    assert failed_position(smol(code), Failure("nothing like it", error)) is None
    assert execution_failure("Error in code parsing: no match") == Failure(
        "", "Error in code parsing: no match"
    )


def test_the_tools_a_smolagents_system_prompt_lists() -> None:
    prompt = (
        "you only have access to these tools:\n"
        "- visualizer: A tool that can answer questions about attached images.\n"
        "    Takes inputs: {'image_path': {'type': 'string'}}\n"
        "- final_answer: Provides a final answer to the given problem.\n"
        "Here is a list of the team members that you can call:\n"
        "- search_agent: A team member that will search the internet.\n"
    )
    assert prompt_tools(prompt) == {"visualizer", "final_answer", "search_agent"}


# -- smolagents step spans, as OTLP ----------------------------------------------------


def smolagents_step(
    run: Run,
    output: str,
    *,
    traced: tuple[str, ...] = (),
    observation: str | None = None,
    error: str | None = None,
) -> None:
    """One CodeAgent step as OpenInference's smolagents instrumentation traces it."""
    with (
        run.span(
            "CodeAgent.run",
            {
                "openinference.span.kind": "AGENT",
                "input.value": json.dumps({"task": "Find the census."}),
                "smolagents.tools_names": json.dumps(sorted(TOOLS)),
            },
        ),
        run.span(
            "Step 1",
            {
                "openinference.span.kind": "CHAIN",
                "input.value": '{"memory_step": "ActionStep(...)"}',
            },
        ) as step,
    ):
        run.leaf(
            "LiteLLMModel.__call__",
            {
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": output,
                "input.value": json.dumps({"messages": [{"role": "system", "content": SYSTEM}]}),
                "llm.token_count.prompt": 1000,
                "llm.token_count.completion": 50,
            },
        )
        for name in traced:
            run.leaf(
                f"{name}Tool",
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": name,
                    "input.value": '{"args": [], "kwargs": {}}',
                    "output.value": f"{name} output",
                },
            )
        if observation is not None:
            step.set_attribute("output.value", observation)
        if error is not None:
            step.add_event(
                "exception",
                {"exception.type": "AgentExecutionError", "exception.message": error},
                timestamp=run.tick(),
            )
            step.set_status(Status(StatusCode.ERROR, error))


def calls(drafts: list[Draft]) -> list[tuple[str | None, str]]:
    return [(d.step.tool, d.fallback_id) for d in drafts if d.step.kind == StepKind.TOOL_CALL]


def test_a_call_with_its_own_tool_span_is_not_counted_twice() -> None:
    run = Run()
    output = smol('text = inspect_file_as_text(file_path="a.pdf")\nfinal_answer(text[:20])')
    smolagents_step(
        run,
        output,
        traced=("inspect_file_as_text", "final_answer"),
        observation="Execution logs:\nLast output from code snippet:\nabc",
    )
    drafts = run.drafts()
    # one call each, from the TOOL spans; the code adds nothing
    assert sorted(str(tool) for tool, _ in calls(drafts)) == [
        "final_answer",
        "inspect_file_as_text",
    ]
    assert all(ref.endswith(":call") and ":code" not in ref for _, ref in calls(drafts))


def test_an_untraced_call_and_plain_computation_become_steps_linked_to_the_step_span() -> None:
    run = Run()
    observation = "Execution logs:\n58.2\nLast output from code snippet:\nNone"
    smolagents_step(run, smol("x = (1200 - 618) / 10\nprint(x)"), observation=observation)
    drafts = run.drafts()
    step_span = next(d.span_id for d in drafts if d.step.kind == StepKind.TOOL_CALL)
    call = next(d for d in drafts if d.step.kind == StepKind.TOOL_CALL)
    result = next(d for d in drafts if d.step.kind == StepKind.TOOL_RESULT)
    assert call.step.tool == "python" and json.loads(call.step.arguments or "{}") == {
        "code": "x = (1200 - 618) / 10\nprint(x)"
    }
    assert result.step.status == "ok" and result.step.result == observation
    assert call.step.source_ref == result.step.source_ref == f"{call.trace_id}:{step_span}"
    assert call.fallback_id.endswith(":block0:call") and result.fallback_id.endswith(
        ":block0:result"
    )
    assert call.step.ts < result.step.ts


def test_a_failed_execution_fails_the_statement_it_names_and_what_follows_never_ran() -> None:
    run = Run()
    code = 'with open("data.jsonld") as f:\n    text = f.read()\nfinal_answer(len(text))'
    error = (
        "Code execution failed at line 'with open(\"data.jsonld\") as f:\n    text = f.read()' "
        "due to: InterpreterError: It is not permitted to evaluate other functions"
    )
    smolagents_step(run, smol(code), error=error)
    drafts = run.drafts()
    assert calls(drafts) == [("python", calls(drafts)[0][1])]  # final_answer never ran
    result = next(d for d in drafts if d.step.kind == StepKind.TOOL_RESULT)
    assert result.step.status == "error" and "InterpreterError" in (result.step.error or "")
    # the failure is the result's: no separate error step for the same span
    assert not [d for d in drafts if d.step.kind == StepKind.ERROR]


def test_a_parsing_error_makes_no_action() -> None:
    run = Run()
    smolagents_step(
        run,
        "Thought: I will answer.\nThe answer is 4.",
        error="Error in code parsing:\nThe code blob is invalid",
    )
    drafts = run.drafts()
    assert not calls(drafts)
    assert [d.step.kind for d in drafts if d.step.kind == StepKind.ERROR] == [StepKind.ERROR]


def test_an_openhands_action_and_its_observation_in_the_next_model_call() -> None:
    run = Run()
    output = "Run the tests.\n<execute_bash>\npytest -q\n</execute_bash>"
    with run.span("invoke_agent openhands", {"gen_ai.operation.name": "invoke_agent"}):
        run.leaf(
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": output}]),
            },
        )
        history = [
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": output},
            {
                "role": "user",
                "content": "OBSERVATION:\n1 failed\n[Command finished with exit code 1]",
            },
        ]
        run.leaf(
            "chat gpt-4o",
            {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(history)},
        )
    drafts = run.drafts()
    call = next(d for d in drafts if d.step.kind == StepKind.TOOL_CALL)
    result = next(d for d in drafts if d.step.kind == StepKind.TOOL_RESULT)
    assert (call.step.tool, json.loads(call.step.arguments or "{}")) == (
        "bash",
        {"command": "pytest -q"},
    )
    assert result.step.status == "error" and "1 failed" in (result.step.result or "")


# -- a real TRAIL trace ----------------------------------------------------------------


def trail_spans(trace: str) -> list[Any]:
    with lzma.open(GAIA / f"{trace}.json.xz") as fh:
        doc = json.loads(fh.read())
    return decode_trail(doc, source="test").spans


def replayed(trace: str, tmp_path: Path) -> list[Any]:
    url = f"sqlite:///{tmp_path / 'tw.db'}"
    replay([GAIA / f"{trace}.json.xz"], settings=Settings(db_url=url))
    with Store.open(url) as store:
        return store.steps(trace)


@pytest.mark.skipif(not GAIA.exists(), reason="needs ../shared/corpus beside the repo")
def test_a_trail_trace_shows_the_managers_code_actions_with_their_results(
    tmp_path: Path,
) -> None:
    # the manager simulates a game in Python twice: the first run fails, the second prints
    trace = "7ee8e8df6e8cd101d9af8a4a4f6ceedb"
    spans = {s.span_id: s for s in trail_spans(trace)}
    steps = replayed(trace, tmp_path)
    code_calls = [s for s in steps if s.kind == StepKind.TOOL_CALL and ":block" in s.step_id]
    assert [s.tool for s in code_calls] == ["python", "python"]
    outcomes = []
    for call in code_calls:
        (result,) = [s for s in steps if s.parent_step_id == call.step_id]
        span = spans[call.source_ref.split(":")[1]]
        assert span.name.startswith("Step ") and result.source_ref == call.source_ref
        assert call.step_id == f"{trace}:{span.span_id}:block0:call"
        assert call.seq < result.seq
        assert "simulate_game" in json.loads(call.arguments or "{}")["code"]
        outcomes.append((result.status, (result.error or result.result or "")[:60]))
    assert outcomes[0][0] == "error" and "Code execution failed" in outcomes[0][1]
    assert outcomes[1][0] == "ok"
    assert outcomes[1][1].startswith("Execution logs:\nBall with highest ejection")
    # the failure is the failed action's result, not a second error step
    failed_span = code_calls[0].source_ref
    assert not [s for s in steps if s.kind == StepKind.ERROR and s.source_ref == failed_span]


@pytest.mark.skipif(not GAIA.exists(), reason="needs ../shared/corpus beside the repo")
def test_printing_a_task_is_no_action_and_traced_reads_count_once(tmp_path: Path) -> None:
    # the manager prints a task for its search agent four times instead of calling it
    # (the observation restates the code's own text: nothing ran), and reads a file twice
    # through inspect_file_as_text, both failing inside TOOL spans
    trace = "f04b425c107f7b972209528a46c407d9"
    spans = trail_spans(trace)
    steps = replayed(trace, tmp_path)
    assert not [s for s in steps if ":block" in s.step_id or ":code" in s.step_id]
    reads = [s for s in steps if s.kind == StepKind.TOOL_CALL and s.tool == "inspect_file_as_text"]
    traced = [s for s in spans if s.attributes.get("tool.name") == "inspect_file_as_text"]
    assert len(reads) == len(traced) == 2
    answers = [s for s in steps if s.kind == StepKind.TOOL_CALL and s.tool == "final_answer"]
    assert len(answers) == 1 and ":code" not in answers[0].step_id


@pytest.mark.skipif(not GAIA.exists(), reason="needs ../shared/corpus beside the repo")
def test_a_trail_call_that_failed_before_its_tool_ran_is_a_failed_code_action() -> None:
    # final_answer(task=...) raised a TypeError when called: no FinalAnswerTool span
    drafts = spans_to_drafts(trail_spans("3205fa0cb2135fe671bf7cd0e5a26151"))
    code = [d for d in drafts if ":code" in d.fallback_id or ":block" in d.fallback_id]
    results = {d.step.tool: d.step for d in code if d.step.kind == StepKind.TOOL_RESULT}
    assert set(results) == {"python", "final_answer"}
    assert results["final_answer"].status == "error"
    assert "unexpected keyword argument 'task'" in (results["final_answer"].error or "")
    assert results["python"].status == "error" and "open(" in (results["python"].error or "")


def test_a_block_that_prints_its_own_text_is_no_action() -> None:
    run = Run()
    code = (
        'task = (\n    "Please find the 2011 census figures "\n    "for tertiary education.")\n'
        "print(task)"
    )
    said = "Execution logs:\nPlease find the 2011 census figures for tertiary education.\n"
    observation = said + "Last output from code snippet:\nNone"
    smolagents_step(run, smol(code), observation=observation)
    assert not calls(run.drafts())
    # the same block printing something it computed is an action
    run = Run()
    counted = said + "58\nLast output from code snippet:\nNone"
    smolagents_step(run, smol(code + "\nprint(len(task))"), observation=counted)
    assert [tool for tool, _ in calls(run.drafts())] == ["python"]


def step_rows(store: Store, session: str) -> list[tuple[Any, ...]]:
    return [
        (s.step_id, s.kind, s.tool, s.arguments, s.status, s.result, s.parent_step_id)
        for s in store.steps(session)
        if s.kind in (StepKind.TOOL_CALL, StepKind.TOOL_RESULT, StepKind.ERROR)
    ]


def test_spans_exported_one_by_one_give_the_same_code_actions(tmp_path: Path) -> None:
    # OpenTelemetry's SimpleSpanProcessor (smolagents' documented setup) sends each span
    # as it ends: the model call and the tool span reach the pipeline before their step
    run = Run()
    code = (
        'text = inspect_file_as_text(file_path="a.pdf")\n'
        "print(len(text) * 2)\n"
        "web_search(query=text)"
    )
    smolagents_step(
        run,
        smol(code),
        traced=("inspect_file_as_text",),
        observation="Execution logs:\n84\nLast output from code snippet:\nNone",
    )
    spans = run.exporter.get_finished_spans()
    rows = []
    for name, requests in (("batch", [spans]), ("one_by_one", [[s] for s in spans])):
        with Store.open(f"sqlite:///{tmp_path / name}.db") as store:
            pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000))
            for i, request in enumerate(requests):
                data = encode_spans(request).SerializeToString()
                pipeline.feed_otlp_proto(data, source="t", location=str(i), partition="p")
            pipeline.close()
            (session,) = store.sessions()
            rows.append(step_rows(store, session.session_id))
    assert rows[0] == rows[1]
    tools = [(row[2], row[4]) for row in rows[0] if row[1] == StepKind.TOOL_RESULT]
    # web_search left no span (an untraced call): its result is the observation
    assert tools == [("inspect_file_as_text", "ok"), ("web_search", "ok")]
    assert rows[0][-1][5] == "Execution logs:\n84\nLast output from code snippet:\nNone"


@pytest.mark.parametrize("lateness_ms", [1_000_000, 0], ids=["within", "beyond"])
def test_children_read_after_their_step_give_the_same_code_actions(
    tmp_path: Path, lateness_ms: int
) -> None:
    # the model call, then the step span, then its tool spans one by one (a later batch,
    # another partition): each maps the step again, and what it inferred before and no
    # longer does is dropped (within the lateness window: before it is released; beyond
    # it: deleted from the store, the session judged again when it settles)
    run = Run()
    code = 'text = inspect_file_as_text(file_path="a.pdf")\nfinal_answer(text[:20])'
    smolagents_step(
        run,
        smol(code),
        traced=("inspect_file_as_text", "final_answer"),
        observation="Execution logs:\nLast output from code snippet:\nabc",
    )
    spans = run.exporter.get_finished_spans()
    model, *tools, step, agent = spans
    rows = []
    for name, requests, lateness in (
        ("batch", [spans], 1_000_000),
        ("step first", [[model], [step], *([t] for t in tools), [agent]], lateness_ms),
    ):
        with Store.open(f"sqlite:///{tmp_path / name}.db") as store:
            pipeline = Pipeline(store, settings=Settings(lateness_ms=lateness))
            for i, request in enumerate(requests):
                data = encode_spans(request).SerializeToString()
                pipeline.feed_otlp_proto(data, source="t", location=str(i), partition=str(i))
                pipeline.commit()
            pipeline.close()
            (session,) = store.sessions()
            rows.append(step_rows(store, session.session_id))
    assert rows[1] == rows[0]
    assert [row[2] for row in rows[0] if row[1] == StepKind.TOOL_CALL] == [
        "inspect_file_as_text",
        "final_answer",
    ]


def test_a_tool_calling_step_with_code_in_its_text_is_no_code_action() -> None:
    # a ToolCallingAgent step: the model called a tool the structured way; the code in
    # its text is an example it wrote, not something smolagents ran
    run = Run()
    with run.span("Step 1", {"openinference.span.kind": "CHAIN"}):
        run.leaf(
            "LiteLLMModel.__call__",
            {
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.content": smol("web_search(query='x')"),
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "visit",
            },
        )
    assert not calls(run.drafts())


_FRAGMENTS = st.sampled_from(
    [
        "```py\n",
        "```\n",
        "\n```",
        "<code>",
        "</code>",
        "<execute_bash>",
        "</execute_bash>",
        "<execute_ipython>",
        "web_search(",
        "query=",
        "'a'",
        '"b"',
        ")",
        "(",
        "[",
        "]",
        "{",
        "}",
        "\n",
        "    ",
        "x = ",
        "print(",
        "final_answer(",
        "**k",
        "*a",
        "1e999",
        "lambda: ",
        "f'{x}'",
        "def f():\n",
        "import os\n",
        "#",
        "\\",
        "Code execution failed at line '",
        "' due to: ",
        "Execution logs:\n",
        "Last output from code snippet:\n",
    ]
)
_TEXT = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=8)), max_size=40).map("".join)


@given(output=_TEXT, observation=_TEXT, error=st.one_of(st.none(), _TEXT))
@settings(max_examples=150, deadline=None)
def test_any_model_output_and_observation_map_without_raising(
    output: str, observation: str, error: str | None
) -> None:
    actions = code_actions(output, tools=TOOLS)
    assert len(actions) <= 32
    for _, code in code_blocks(output):
        restates_code(code, observation)
    failure = execution_failure(error)
    if failure is not None:
        failed_position(output, failure)
    run = Run()
    smolagents_step(run, output, observation=observation, error=error)
    for draft in run.drafts():
        assert draft.step.source_ref


def test_a_statement_failing_after_its_traced_call_succeeded_is_a_failed_python_action() -> None:
    run = Run()
    statement = 'text = inspect_file_as_text(file_path="a.pdf")[99]'
    error = f"Code execution failed at line '{statement}' due to: IndexError: out of range"
    smolagents_step(
        run, smol(statement + "\nprint(text)"), traced=("inspect_file_as_text",), error=error
    )
    drafts = run.drafts()
    results = [(d.step.tool, d.step.status) for d in drafts if d.step.kind == StepKind.TOOL_RESULT]
    assert results == [("inspect_file_as_text", "ok"), ("python", "error")]
