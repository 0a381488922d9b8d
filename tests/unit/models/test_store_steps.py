"""``Store.steps`` / ``StoreUnit.steps`` read back by kind: the same steps, in the same
seq order, as reading them all and keeping those kinds (the workspace stage reads only
tool calls and checkpoints of a session this way)."""

from __future__ import annotations

from pathlib import Path

from models.records import Step, StepKind
from models.store import Store

_KINDS = [
    StepKind.START,
    StepKind.MODEL_CALL,
    StepKind.TOOL_CALL,
    StepKind.TOOL_RESULT,
    StepKind.CHECKPOINT,
    StepKind.TOOL_CALL,
    StepKind.TOOL_RESULT,
    StepKind.END,
]


def _steps(session_id: str) -> list[Step]:
    return [
        Step(
            step_id=f"{session_id}#{seq}",
            session_id=session_id,
            kind=kind,
            ts=1_000 + seq,
            seq=seq,
            tool="bash" if kind == StepKind.TOOL_CALL else None,
            detail={"commit": "abc"} if kind == StepKind.CHECKPOINT else {},
        )
        for seq, kind in enumerate(_KINDS)
    ]


def test_steps_of_some_kinds_are_those_of_all_steps_with_that_kind(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'kinds.db'}")
    try:
        with store.unit() as unit:
            unit.add_steps([*_steps("a"), *_steps("b")])
        wanted = (StepKind.TOOL_CALL, StepKind.CHECKPOINT)
        every = store.steps("a")
        assert [s.seq for s in every] == list(range(len(_KINDS)))
        expected = [s for s in every if s.kind in wanted]
        assert [s.seq for s in expected] == [2, 4, 5]
        assert store.steps("a", kinds=wanted) == expected
        with store.unit() as unit:
            assert unit.steps("a", kinds=wanted) == expected
            assert unit.steps("a", 3, kinds=wanted) == [s for s in expected if s.seq >= 3]
            assert unit.steps("b", kinds=[StepKind.END]) == [store.steps("b")[-1]]
            assert unit.steps("a", kinds=()) == []
    finally:
        store.close()
