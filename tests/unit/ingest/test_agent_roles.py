"""Which agent span is the session's run does not depend on how the spans were batched.

Exporters send a trace piecemeal (a sub-agent ends, and is exported, before the tool call
that delegated to it; a graph's root span comes last). The same spans cut into batches
of any size must give the same steps: the sub-agents' starts, one ``end`` (the run's),
the same model-call contexts (so the same inferred compactions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest.decoded import Decoded
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.pipeline.agent_roles import MAIN, SUB, UNDECIDED, agent_role, settled_role
from ingest.pipeline.engine import Pipeline
from models.store import Store
from tests.unit.ingest.test_dialects import Run

SESSION = "conv-roles-1"


def _chat(run: Run, agent: str, tokens: int, n: int) -> None:
    run.leaf(
        f"chat m-{agent}-{n}",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": SESSION,
            "gen_ai.response.id": f"resp-{agent}-{n}",
            "gen_ai.usage.input_tokens": tokens,
        },
    )


def _tool(run: Run, agent: str, name: str, n: int) -> None:
    run.leaf(
        f"execute_tool {name}",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": f"call-{agent}-{n}",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": SESSION,
        },
    )


def adk_with_sub_agents() -> Run:
    """An ADK-shaped run: the root agent delegates to three sub-agents through a tool
    call (``execute_tool delegate`` → ``invoke_agent``); the sub-agents' prompts are
    larger than the main agent's, so a context mixed up would infer a compaction."""
    run = Run("adk")
    root = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "assistant",
        "gen_ai.conversation.id": SESSION,
        "gen_ai.input.messages": json.dumps([{"role": "user", "content": "Research cobalt"}]),
    }
    with run.span("invoke_agent assistant", root):
        _chat(run, "assistant", 1_000, 0)
        for i, topic in enumerate(("prices", "recovery", "rules")):
            delegate = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "delegate",
                "gen_ai.tool.call.id": f"delegate-{i}",
                "gen_ai.conversation.id": SESSION,
            }
            with run.span("execute_tool delegate", delegate):
                sub = {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": f"research-{topic}",
                    "gen_ai.conversation.id": SESSION,
                    "gen_ai.input.messages": json.dumps([{"role": "user", "content": topic}]),
                }
                with run.span(f"invoke_agent research-{topic}", sub):
                    for n in range(3):
                        _chat(run, f"research-{topic}", 6_000 + 500 * n, n)
                        _tool(run, f"research-{topic}", "web_search", n)
            _chat(run, "assistant", 1_200 + 100 * i, i + 1)
    return run


def langgraph_openinference() -> Run:
    """LangGraph under OpenInference: a root ``CHAIN`` span for the graph, an ``AGENT``
    span per execution of the agent node, each with its ``LLM`` call, tools between."""
    run = Run("langgraph")
    graph = {
        "openinference.span.kind": "CHAIN",
        "session.id": SESSION,
        "input.value": json.dumps({"messages": [{"role": "user", "content": "Fix the build"}]}),
    }
    with run.span("LangGraph", graph):
        for n in range(4):
            node = {"openinference.span.kind": "AGENT", "session.id": SESSION}
            with run.span("agent", node):
                llm = {
                    "openinference.span.kind": "LLM",
                    "session.id": SESSION,
                    "llm.token_count.prompt": 800 + 200 * n,
                    "llm.model_name": "gpt-4o",
                }
                run.leaf("ChatOpenAI", llm)
            tool = {
                "openinference.span.kind": "TOOL",
                "session.id": SESSION,
                "tool.name": "run_tests",
                "input.value": json.dumps({"n": n}),
            }
            run.leaf("run_tests", tool)
    return run


def _spans(run: Run) -> list[Any]:
    decoded = decode_otlp_proto(run.request().SerializeToString(), source="test")
    assert not decoded.rejects
    return decoded.spans  # in export order: each span at its end


def _replay(tmp_path: Path, name: str, spans: list[Any], size: int) -> list[tuple[Any, ...]]:
    """The stored steps (seq, step id, kind, sub-agent flag) of ``spans`` fed as decoded
    batches of ``size`` spans, in order, on one partition, committed after each."""
    store = Store.open(f"sqlite:///{tmp_path / f'{name}-{size}.db'}")
    try:
        pipeline = Pipeline(store)
        for i in range(0, len(spans), size):
            pipeline.feed_decoded(Decoded(spans=spans[i : i + size]), partition="0")
            pipeline.commit()
        pipeline.close()
        steps = store.steps(SESSION)
    finally:
        store.close()
    return [(s.seq, s.step_id, s.kind, s.detail.get("subagent")) for s in steps]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_sub_agents_are_the_same_whatever_the_batching(tmp_path: Path, size: int) -> None:
    spans = _spans(adk_with_sub_agents())
    whole = _replay(tmp_path, "adk", spans, len(spans))
    assert _replay(tmp_path, "adk", spans, size) == whole
    starts = [(key, sub) for _, key, kind, sub in whole if kind == "start"]
    assert starts[0] == (f"{SESSION}/start", False)
    assert [sub for _, sub in starts[1:]] == [True, True, True]
    ends = [key for _, key, kind, _ in whole if kind == "end"]
    assert ends == [f"{SESSION}/end"] and whole[-1][2] == "end"
    assert "compaction" not in {kind for _, _, kind, _ in whole}


@pytest.mark.parametrize("size", [1, 3, 100])
def test_langgraph_agent_node_executions_are_not_the_run(tmp_path: Path, size: int) -> None:
    spans = _spans(langgraph_openinference())
    whole = _replay(tmp_path, "lg", spans, len(spans))
    assert _replay(tmp_path, "lg", spans, size) == whole
    kinds = [kind for _, _, kind, _ in whole]
    assert "end" not in kinds  # no node execution's end ends the session
    assert kinds.count("model_call") == 4 and kinds.count("tool_call") == 4
    assert {sub for _, _, kind, sub in whole if kind == "start"} == {True}


def _tree(spans: dict[str, tuple[str | None, str]]) -> tuple[dict[str, str | None], dict[str, str]]:
    return {k: p for k, (p, _) in spans.items()}, {k: r for k, (_, r) in spans.items()}


def test_agent_role_rules() -> None:
    # a root agent is the run at once; a sub-agent under a tool call is decided when the
    # tool call is known, whatever is above it
    assert agent_role(_tree({"a": (None, "agent")}), "a") == MAIN
    assert agent_role(_tree({"s": ("t", "agent")}), "s") is UNDECIDED
    assert agent_role(_tree({"s": ("t", "agent"), "t": ("r", "tool")}), "s") == SUB
    # an agent under an HTTP server span: the run once the root is known
    http = {"a": ("h", "agent"), "h": (None, "other")}
    assert agent_role(_tree(http), "a") == MAIN
    # several agents under one non-agent root: none of them is the run
    graph = {"g": (None, "other"), "a1": ("g", "agent"), "a2": ("g", "agent")}
    assert agent_role(_tree(graph), "a1") == SUB
    # the one agent an outermost workflow wraps is the run; of two, neither
    wrapped = {"w": (None, "workflow"), "a": ("w", "agent")}
    assert agent_role(_tree(wrapped), "a") == MAIN
    two = {**wrapped, "b": ("w", "agent")}
    assert agent_role(_tree(two), "a") == SUB
    # waiting is over: an agent whose parent never came is not known to be the run
    assert settled_role(_tree({"s": ("t", "agent")}), "s") == SUB
    assert settled_role(None, "s") == SUB
