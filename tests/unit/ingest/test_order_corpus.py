"""Deliverable 5 of issue 27 on real inputs: a session is what the agent did, not how the
wire delivered it, for TRAIL GAIA traces, AgentDojo runs, the runtime recordings in
``../shared/corpus`` and a conversation traced one trace per turn.

Span inputs (TRAIL, the Tempo export, the ADK export, the conversation) are re-cut into
export batches, shuffled, split across partitions and partly re-delivered; session-log
inputs (AgentDojo runs, Claude Code transcripts, Codex rollouts) are decoded by their
format and their steps fed the same way, except that steps of one event time keep their
log's order (:mod:`ingest.pipeline.event_order`: a log has no tie-break of its own, it is
read in one order). The settled steps (ids in seq order) and the standing alert ids must
be those of one in-order delivery. The corpus is read in place (never copied into the
repository); a clone without it skips.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from functools import cache, partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ingest.decoded import Decoded, Draft, SpanRecord
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.formats.table import decode
from ingest.sources.files import read_file
from tests.support.paths import CORPUS
from tests.unit.ingest.test_dialects import Run
from tests.unit.ingest.test_order_properties import (
    LATENESS_MS,
    _within_window,
    cut,
    settled,
)

pytestmark = pytest.mark.slow

GAIA = CORPUS / "trail" / "traces" / "gaia"
GAIA_TRACES = (  # the four smallest traces (11 spans), and the one of most spans (95)
    "0ebe673d64647ec44c370638b82d3c78",
    "5e5dc94e090341c564d582f551a0cddb",
    "f39aec9b8a61fd2aaed5849cc00bc165",
    "dbc070b918d4a052c0b686081408fb52",
    "b69bcf49516121f03e5809cbd776c21f",
)
RECORDINGS = CORPUS / "recordings"
OTLP_RECORDINGS = (
    "agentevals-dev__agentevals__tempo_export_with_batches.json.xz",
    "agentevals-dev__agentevals__adk_py_v1_default_S2.json.xz",
)
CODEX_ROLLOUT = (
    RECORDINGS
    / "codex"
    / "codemie-ai__codemie-code__rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799"
    ".jsonl.xz"
)
AGENTDOJO = (
    CORPUS
    / "agentdojo"
    / "runs"
    / "agentdojo-gpt-4o-2024-05-13-spotlighting_with_delimiting.jsonl.xz"
)


def _read(path: Path) -> list[Decoded]:
    """``path`` read and decoded as replay reads it (skips when the corpus is absent)."""
    if not path.exists():
        pytest.skip(f"needs {path} (../shared/corpus beside the repo, or TRAJWATCH_CORPUS)")
    decoded = [decode(record, max_attribute_bytes=1 << 20) for record in read_file(path, "0")]
    assert not [d for d in decoded if d.rejects], f"{path.name} no longer reads cleanly"
    return decoded


@cache
def file_spans(path: Path) -> list[SpanRecord]:
    return [span for d in _read(path) for span in d.spans]


@cache
def file_drafts(path: Path) -> list[Draft]:
    return [draft for d in _read(path) for draft in d.drafts]


# -- a conversation traced one trace per turn ----------------------------------------------

CONVERSATION = "conv-order-7"
TURNS = (
    "Find why the nightly build of the payments service fails",
    "Check the flaky test you found again",
    "Now open a ticket with what you found",
)


@cache
def conversation_spans(gap_s: float) -> list[SpanRecord]:
    """A three-turn conversation, each turn its own trace (its ``invoke_agent`` root, model
    calls and tool calls naming the conversation), the turns ``gap_s`` apart; the second
    turn repeats one failing tool call, so the conversation raises alerts. Made once (the
    SDK draws random ids): every delivery of it is of the same spans."""
    spans: list[SpanRecord] = []
    now = None
    for turn, text in enumerate(TURNS):
        run = Run("helper")
        run.now = now + int(gap_s * 1e9) if now is not None else run.now
        _turn(run, turn, text)
        spans += decode_otlp_proto(run.request().SerializeToString(), source="test").spans
        now = run.now
    return spans


def _turn(run: Run, turn: int, text: str) -> None:
    user = f'[{{"role": "user", "parts": [{{"type": "text", "content": "{text}"}}]}}]'
    names = {"gen_ai.conversation.id": CONVERSATION, "gen_ai.agent.name": "helper"}
    calls = 6 if turn == 1 else 2
    with run.span(
        "invoke_agent helper",
        {**names, "gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": user},
    ):
        for i in range(calls):
            call_id = f"call-{turn}-{i}"
            command = "pytest tests/test_ledger.py -k flaky" if turn == 1 else f"cat log{i}.txt"
            run.leaf(
                "chat m",
                {
                    **names,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.usage.input_tokens": 1000 + 100 * i,
                    "gen_ai.input.messages": user,
                    "gen_ai.output.messages": (
                        '[{"role": "assistant", "parts": [{"type": "tool_call", "id": '
                        f'"{call_id}", "name": "shell", "arguments": {{"cmd": "{command}"}}}}]}}]'
                    ),
                },
            )
            run.leaf(
                "execute_tool shell",
                {
                    **names,
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "shell",
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.call.arguments": f'{{"cmd": "{command}"}}',
                    "gen_ai.tool.call.result": "1 failed: AssertionError" if turn == 1 else "ok",
                },
            )


# -- inputs ---------------------------------------------------------------------------------

AGENTDOJO_LINES = (1, 2, 18, 61, 66, 72, 100, 158)
"""Runs of one AgentDojo configuration: benign ones that raise nothing, attacked ones
whose in-order judgement raises egress, drift and loop alerts."""

SPAN_INPUTS: dict[str, Callable[[], list[SpanRecord]]] = {
    **{f"gaia-{t[:8]}": partial(file_spans, GAIA / f"{t}.json.xz") for t in GAIA_TRACES},
    **{
        f"otlp-{name.split('__')[2][:12]}": partial(file_spans, RECORDINGS / "otlp" / name)
        for name in OTLP_RECORDINGS
    },
    "turns-2s-apart": lambda: conversation_spans(2),
    "turns-60s-apart": lambda: conversation_spans(60),
}


@cache
def agentdojo_drafts() -> list[Draft]:
    wanted = {f":{line}" for line in AGENTDOJO_LINES}
    drafts = file_drafts(AGENTDOJO)
    return [d for d in drafts if d.step.session_id[d.step.session_id.rfind(":") :] in wanted]


LOG_INPUTS: dict[str, Callable[[], list[Draft]]] = {
    "agentdojo": agentdojo_drafts,
    **{
        f"{path.parent.name}-{path.name.split('__')[2][:8]}": partial(file_drafts, path)
        for path in (
            RECORDINGS / "claude_code" / name
            for name in (
                "codemie-ai__codemie-code__4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl.xz",
                "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl.xz",
                "d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl.xz",
            )
        )
    },
    "codex-rollout": lambda: file_drafts(CODEX_ROLLOUT),
}


# -- deliveries ------------------------------------------------------------------------------

Deliveries = list[tuple[str, Decoded]]
# fixed seeds and no shrinking: a bounded, repeatable run
EXAMPLES = settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
    phases=[Phase.generate],
)


def in_order(name: str) -> Deliveries:
    """One batch on one partition: spans by end time (as they ended), a log as written."""
    if name in SPAN_INPUTS:
        return [("0", Decoded(spans=sorted(SPAN_INPUTS[name](), key=lambda s: s.end_ns)))]
    return [("0", Decoded(drafts=_fresh(LOG_INPUTS[name]())))]


def _fresh(drafts: list[Draft]) -> list[Draft]:
    """Copies: the ordering stage stamps a draft's arrival and partition on it."""
    return [replace(draft) for draft in drafts]


def span_deliveries(spans: list[SpanRecord], rng: random.Random, *, far: bool) -> Deliveries:
    """``spans`` moved by less than the window (``far``: in any order at all), cut into
    batches on two (three) partitions, a third of the batches delivered again."""
    if far:
        order, partitions = rng.sample(spans, len(spans)), 3
    else:
        order, partitions = _within_window(spans, rng), 2
    batches = [(str(rng.randrange(partitions)), b) for b in cut(order, rng)]
    batches += rng.sample(batches, len(batches) // 3)
    return [(p, Decoded(spans=list(b))) for p, b in batches]


def log_deliveries(drafts: list[Draft], rng: random.Random, *, far: bool) -> Deliveries:
    """A log's steps moved by less than the window (``far``: in any order), each
    session's on one of three partitions (as a log keyed by session is), cut into
    batches, the partitions' batches interleaved at random, a third delivered again.
    Steps of one session and event time keep their log's order: nothing else orders them."""
    window = LATENESS_MS * 1_000_000 // 2
    moved: dict[tuple[str, int], float] = {}
    for d in drafts:
        place = (d.step.session_id, d.step.ts)
        if place not in moved:
            moved[place] = rng.random() if far else d.step.ts + rng.randrange(window)
    order = sorted(drafts, key=lambda d: moved[d.step.session_id, d.step.ts])  # stable
    partition = {s: str(rng.randrange(3)) for s in sorted({d.step.session_id for d in drafts})}
    queues = [
        [(p, b) for b in cut([d for d in order if partition[d.step.session_id] == p], rng)]
        for p in sorted(set(partition.values()))
    ]
    batches: list[tuple[str, list[Draft]]] = []
    while any(queues):
        batches.append(rng.choice([q for q in queues if q]).pop(0))
    batches += rng.sample(batches, len(batches) // 3)
    return [(p, Decoded(drafts=_fresh(b))) for p, b in batches]


_WHOLE: dict[str, tuple] = {}


def check(tmp: Path, name: str, deliveries: Deliveries, label: str) -> None:
    """The settled steps (ids in seq order) and standing alert ids after ``deliveries`` are
    those of the in-order delivery of ``name``."""
    if name not in _WHOLE:
        _WHOLE[name] = settled(tmp, f"whole-{name}", in_order(name))
    got = settled(tmp, label, deliveries)
    whole = _WHOLE[name]
    assert got[0] == whole[0], _first_difference(got[0], whole[0])
    assert got[1] == whole[1]


def _first_difference(got: list, want: list) -> str:
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"step {i}: got {a}, in order {b}"
    return f"{len(got)} steps, in order {len(want)}"


# -- properties ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SPAN_INPUTS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_spans_within_the_window_settle_to_the_in_order_session(
    tmp_path: Path, name: str, seed: int
) -> None:
    spans = SPAN_INPUTS[name]()
    check(tmp_path, name, span_deliveries(spans, random.Random(seed), far=False), f"w-{seed}")


@pytest.mark.parametrize("name", SPAN_INPUTS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_spans_in_any_order_settle_to_the_in_order_session(
    tmp_path: Path, name: str, seed: int
) -> None:
    spans = SPAN_INPUTS[name]()
    check(tmp_path, name, span_deliveries(spans, random.Random(seed), far=True), f"a-{seed}")


@pytest.mark.parametrize("name", LOG_INPUTS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_log_steps_within_the_window_settle_to_the_in_order_session(
    tmp_path: Path, name: str, seed: int
) -> None:
    drafts = LOG_INPUTS[name]()
    check(tmp_path, name, log_deliveries(drafts, random.Random(seed), far=False), f"w-{seed}")


@pytest.mark.parametrize("name", LOG_INPUTS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_log_steps_in_any_order_settle_to_the_in_order_session(
    tmp_path: Path, name: str, seed: int
) -> None:
    drafts = LOG_INPUTS[name]()
    check(tmp_path, name, log_deliveries(drafts, random.Random(seed), far=True), f"a-{seed}")


def _turns(spans: list[SpanRecord]) -> list[list[SpanRecord]]:
    """The conversation's turns (one trace each) in the order they ran, each turn's spans
    in the order they ended (an exporter's order: the turn's root last)."""
    traces: dict[str, list[SpanRecord]] = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        traces.setdefault(span.trace_id, []).append(span)
    return [sorted(turn, key=lambda s: s.end_ns) for turn in traces.values()]


@pytest.mark.parametrize("name", ["turns-2s-apart", "turns-60s-apart"])
@pytest.mark.parametrize("arrangement", ["reversed", "interleaved"])
def test_turns_delivered_out_of_order_settle_to_the_in_order_session(
    tmp_path: Path, name: str, arrangement: str
) -> None:
    """Each turn read from a partition of its own, the last turn first: whole turns in
    reverse order, or one span at a time round-robin over the turns, last turn first."""
    turns = list(enumerate(_turns(SPAN_INPUTS[name]())))[::-1]
    if arrangement == "reversed":
        deliveries = [(str(i), Decoded(spans=turn)) for i, turn in turns]
    else:
        deliveries = [
            (str(i), Decoded(spans=[turn[k]]))
            for k in range(max(len(turn) for _, turn in turns))
            for i, turn in turns
            if k < len(turn)
        ]
    check(tmp_path, name, deliveries, arrangement)


@pytest.mark.parametrize("name", ["agentdojo", "gaia-b69bcf49", "turns-2s-apart"])
def test_the_in_order_judgement_raises_alerts(tmp_path: Path, name: str) -> None:
    """The alert half of the properties is not vacuous: these inputs raise alerts."""
    check(tmp_path, name, in_order(name), "again")
    assert _WHOLE[name][1]
