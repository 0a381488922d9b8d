"""A conversation whose history was replaced (a summary as its first user message, a
smaller input) is a compaction; a new turn or a growing input is not; OpenInference's
flattened system messages are the session's instructions."""

from __future__ import annotations

from features.session.compaction import CompactionInference
from ingest.semconv.spans import _system_text


def test_a_different_head_with_a_smaller_input_is_a_compaction() -> None:
    c = CompactionInference()
    seen = [
        c.replaced("main", m, t) or c.model_call("main", t) is not None
        for m, t in (
            ("Fix the rounding bug", 9_000),
            ("Fix the rounding bug", 21_000),
            ("This session continues a previous conversation. Summary: …", 19_500),
            ("This session continues a previous conversation. Summary: …", 20_100),
        )
    ]
    assert seen == [False, False, True, False]


def test_a_new_head_with_a_growing_input_is_a_new_turn() -> None:
    c = CompactionInference()
    seen = [c.replaced("main", m, t) for m, t in (("task", 9_000), ("yes, go on", 9_400))]
    assert seen == [False, False]


def test_conversations_are_kept_apart() -> None:
    c = CompactionInference()
    c.replaced("main", "task", 30_000)
    c.model_call("main", 30_000)
    assert not c.replaced("sub-agent", "find the file", 2_000)


def test_state_round_trips() -> None:
    c = CompactionInference()
    c.replaced("main", "task", 30_000)
    c.model_call("main", 30_000)
    d = CompactionInference()
    d.load_state_dict(c.state_dict())
    assert d.replaced("main", "summary", 8_000)


def test_openinference_system_messages_are_instructions() -> None:
    attrs = {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Rules:\n- never push to `main`",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "ship it",
    }
    assert _system_text(attrs) == "Rules:\n- never push to `main`"
    assert _system_text({"llm.input_messages.0.message.role": "user"}) is None
