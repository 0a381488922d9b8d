"""Which agent span is the session's run and which is a sub-agent: decided from the
trace's tree, not from the batch the span came in.

An agent span says ``start`` (and ``end``) for its session only when it is the run: the
outermost agent of its trace (or the one agent an outermost workflow wraps). What is
outermost is a fact of the whole trace, and exporters deliver a trace piecemeal: a
sub-agent ends, and is exported, before the tool call that delegated to it. So the
decision reads the trace index (every span of the trace seen so far, from any batch or
partition), and it is *undecided* while the agent's ancestry is not known:

- an agent without a parent span is the run;
- an agent under a tool call is a sub-agent (a delegated run: ``execute_tool`` →
  ``invoke_agent``), whatever is above the tool;
- an agent under another agent is a sub-agent, unless that agent is an outermost
  ``invoke_workflow`` wrapping it alone (ADK 2.x, OpenLLMetry's root workflow: one run);
- an agent whose ancestors up to the trace's root are neither is the run if it is the
  only such agent under that root; several (LangGraph + OpenInference: an ``AGENT`` span
  per execution of the agent node under the graph's root ``CHAIN``) are steps of one
  workflow, none of them the run;
- an ancestor not seen yet leaves the agent undecided (:data:`UNDECIDED`): the ordering
  stage holds its drafts, and the partition's release behind them
  (:mod:`ingest.pipeline.ordering`), until the ancestry arrives or the lateness window
  has passed the agent's end (its parent ends after it and has had the window to
  arrive); then :func:`settled_role` decides with what is known: an agent whose parent
  never came is not known to be the run, so it is a sub-agent.
"""

from __future__ import annotations

from collections.abc import Mapping

MAIN, SUB, UNDECIDED = "main", "sub", None
"""What :func:`agent_role` answers."""
AGENT_ROLES = frozenset({"agent", "workflow"})
"""Span roles (:func:`ingest.semconv.spans.span_role`) that are an agent run."""
MAX_DEPTH = 256
"""Ancestors walked at most: a bound on one decision's work (and on a cyclic tree)."""

Tree = tuple[Mapping[str, str | None], Mapping[str, str]]
"""A trace's spans seen so far: span id → parent span id, span id → role."""


def agent_role(tree: Tree, span_id: str) -> str | None:
    """:data:`MAIN`, :data:`SUB` or :data:`UNDECIDED` for agent span ``span_id`` of the
    trace ``tree`` (the module's rules)."""
    roles = tree[1]
    top, blocker = _climb(tree, span_id)
    if blocker is None:
        if top is None:
            return UNDECIDED
        if top == span_id:  # no parent: the trace's root agent
            return MAIN
        return MAIN if _outermost_under(tree, top) == 1 else SUB
    if roles.get(blocker) == "tool":
        return SUB
    if roles.get(blocker) == "workflow":
        wrapper = agent_role(tree, blocker)
        if wrapper is UNDECIDED:
            return UNDECIDED
        if wrapper == MAIN and _wrapped_by(tree, blocker) == 1:
            return MAIN
    return SUB


def settled_role(tree: Tree | None, span_id: str) -> str:
    """:func:`agent_role` once waiting is over: an undecided agent (an ancestor never
    came, or the trace was forgotten) is a sub-agent."""
    role = agent_role(tree, span_id) if tree is not None else UNDECIDED
    return SUB if role is UNDECIDED else role


def _climb(tree: Tree, span_id: str) -> tuple[str | None, str | None]:
    """Walk up from ``span_id``'s parent: ``(root, None)`` when the trace's root (a span
    without a parent; ``span_id`` itself if it has none) is reached through spans that
    are neither agents nor tools, ``(None, ancestor)`` at the first agent or tool
    ancestor, ``(None, None)`` when an ancestor is not known."""
    parents, roles = tree
    if span_id not in parents:
        return None, None
    current = span_id
    for _ in range(MAX_DEPTH):
        parent = parents.get(current)
        if not parent:
            return current, None
        if parent not in parents:
            return None, None
        if roles.get(parent) in AGENT_ROLES or roles.get(parent) == "tool":
            return None, parent
        current = parent
    return None, None


def _outermost_under(tree: Tree, root: str) -> int:
    """How many agents of the trace reach ``root`` through spans that are neither agents
    nor tools."""
    roles = tree[1]
    return sum(
        1
        for span_id, role in roles.items()
        if role in AGENT_ROLES and _climb(tree, span_id) == (root, None)
    )


def _wrapped_by(tree: Tree, wrapper: str) -> int:
    """How many agents of the trace have ``wrapper`` as their nearest agent ancestor
    (through any spans, tools included)."""
    parents, roles = tree
    count = 0
    for span_id, role in roles.items():
        if role not in AGENT_ROLES or span_id == wrapper:
            continue
        current = parents.get(span_id)
        for _ in range(MAX_DEPTH):
            if not current or roles.get(current) in AGENT_ROLES:
                break
            current = parents.get(current)
        count += current == wrapper
    return count
