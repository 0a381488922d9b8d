"""Building step streams for detector tests and doctests (like river's ``datasets``).

A :class:`Session` hands out sequenced steps of one session with event times
that advance, so a test reads like the trajectory it describes::

    >>> s = Session("demo", goal="Fix the failing test in tests/test_io.py")
    >>> steps = [s.start(), s.model(tokens_in=1200), *s.tool("bash", {"command": "pytest -q"})]
    >>> [(st.seq, str(st.kind)) for st in steps]
    [(0, 'start'), (1, 'model_call'), (2, 'tool_call'), (3, 'tool_result')]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from features.calls.actions import tool_call_fields
from models.records import Step, StepKind

SECOND = 1_000_000_000
T0 = 1_767_225_600 * SECOND  # 2026-01-01T00:00:00Z


class Session:
    """Hands out the steps of one session, in order."""

    def __init__(
        self,
        session_id: str = "s",
        *,
        goal: str = "",
        policy_id: str | None = None,
        agent: str = "agent",
        workspace: str | None = None,
        repository: str | None = None,
        budget: dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.goal = goal
        self.policy_id = policy_id
        self.agent = agent
        self.workspace = workspace
        self.repository = repository
        self.budget = budget or {}
        self.seq = 0
        self.ts = T0
        self.spoke_ts = T0
        """The event time of the last step that was not a silence."""
        self.calls = 0
        self.model_session = 0

    def _step(self, kind: StepKind, advance: float = 1.0, **fields: Any) -> Step:
        self.ts += int(advance * SECOND)
        self.spoke_ts = self.ts
        if kind == StepKind.COMPACTION:
            self.model_session += 1
        step = Step(
            step_id=f"{self.session_id}#{self.seq}",
            session_id=self.session_id,
            kind=kind,
            ts=self.ts,
            seq=self.seq,
            agent=self.agent,
            model_session=self.model_session,
            source="event",
            source_ref=f"{self.session_id}#{self.seq}",
            **fields,
        )
        self.seq += 1
        return step

    def start(self) -> Step:
        detail: dict[str, Any] = {}
        for key in ("policy_id", "workspace", "repository"):
            if getattr(self, key):
                detail[key] = getattr(self, key)
        if self.budget:
            detail["budget"] = self.budget
        return self._step(StepKind.START, 0, text=self.goal, detail=detail)

    def model(
        self,
        *,
        tokens_in: int = 2_000,
        tokens_out: int = 200,
        text: str | None = None,
        cost: float | None = None,
        model: str = "m",
        finish_reason: str | None = None,
    ) -> Step:
        return self._step(
            StepKind.MODEL_CALL,
            model=model,
            finish_reason=finish_reason,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            text=text,
            cost=cost,
            status="ok",
        )

    def tool(
        self,
        tool: str,
        arguments: Any,
        *,
        ok: bool = True,
        result: str | None = None,
        error: str | None = None,
        idempotency_key: str | None = None,
        seconds: float = 1.0,
        cancelled: bool = False,
    ) -> tuple[Step, Step]:
        """A tool call and its result. ``cancelled``: the runtime cancelled the call
        before it ran (status ``cancelled``, ``error`` the runtime's text)."""
        call = self.call(tool, arguments, idempotency_key=idempotency_key)
        status = "cancelled" if cancelled else "ok" if ok else "error"
        return call, self.result(call, status=status, result=result, error=error, seconds=seconds)

    def call(self, tool: str, arguments: Any, *, idempotency_key: str | None = None) -> Step:
        """A tool call alone; :meth:`result` gives its result."""
        self.calls += 1
        return self._step(
            StepKind.TOOL_CALL,
            call_id=f"call-{self.calls}",
            idempotency_key=idempotency_key,
            **tool_call_fields(tool, arguments),
        )

    def result(
        self,
        call: Step,
        *,
        status: str = "ok",
        result: str | None = None,
        error: str | None = None,
        seconds: float = 1.0,
    ) -> Step:
        """The result of ``call``: status ``ok``, ``error`` or ``cancelled``."""
        return self._step(
            StepKind.TOOL_RESULT,
            seconds,
            tool=call.tool,
            call_id=call.call_id,
            status=status,
            result=result,
            error=error,
            parent_step_id=call.step_id,
        )

    def batch(
        self,
        calls: Sequence[tuple[str, Any]],
        *,
        failed: int,
        error: str = "Exit code 1",
        cancelled_error: str = "Sibling tool call errored",
    ) -> list[Step]:
        """Parallel tool calls as Claude Code runs them: every call, then every result;
        call ``failed`` errs with ``error`` and the runtime cancels its siblings (status
        ``cancelled``, the runtime's ``cancelled_error`` kept as their error text).

        >>> s = Session("b")
        >>> steps = s.batch([("read_file", {"path": "a"}), ("bash", {"command": "no"})], failed=1)
        >>> [f"{st.kind} {st.status}" for st in steps]
        ['tool_call None', 'tool_call None', 'tool_result cancelled', 'tool_result error']
        """
        if not 0 <= failed < len(calls):
            raise ValueError(f"failed must index calls (0..{len(calls) - 1}), got {failed}")
        made = [self.call(tool, arguments) for tool, arguments in calls]
        return made + [
            self.result(c, status="error", error=error)
            if i == failed
            else self.result(c, status="cancelled", error=cancelled_error)
            for i, c in enumerate(made)
        ]

    def egress(
        self,
        url: str,
        *,
        method: str = "GET",
        host: str | None = None,
        parent: Step | None = None,
        status: int = 200,
    ) -> Step:
        from features.text.hosts import host_of

        return self._step(
            StepKind.EGRESS,
            0.1,
            egress_url=url,
            egress_host=host or host_of(url),
            egress_method=method,
            http_status=status,
            status="ok",
            parent_step_id=parent.step_id if parent else None,
            action=f"egress {method} {host or host_of(url)}",
        )

    def approval(self, tool: str | None = None, *, approved: bool = True) -> Step:
        return self._step(
            StepKind.APPROVAL,
            tool=tool,
            status="ok" if approved else "denied",
            detail={"approved": approved},
        )

    def checkpoint(self, checkpoint_id: str, commit: str | None = None) -> Step:
        return self._step(
            StepKind.CHECKPOINT, detail={"checkpoint_id": checkpoint_id, "commit": commit}
        )

    def compaction(
        self, *, before: int = 150_000, after: int = 20_000, inferred: bool = False
    ) -> Step:
        return self._step(
            StepKind.COMPACTION,
            detail={"tokens_before": before, "tokens_after": after, "inferred": inferred},
        )

    def silence(self, seconds: float) -> Step:
        """The ``silence`` step the pipeline places once the session has been quiet for
        ``seconds`` since its last step (not counting silence steps) while the input's
        clock moved on (:mod:`ingest.pipeline.silence`); later steps come after it."""
        spoke = self.spoke_ts
        self.ts = spoke + int(seconds * SECOND)
        step = Step(
            step_id=f"{self.session_id}/silence/{self.ts}",
            session_id=self.session_id,
            kind=StepKind.SILENCE,
            ts=self.ts,
            seq=self.seq,
            agent=self.agent,
            model_session=self.model_session,
            source="pipeline",
            detail={"silence_ms": int(seconds * 1000)},
        )
        self.seq += 1
        return step

    def error(self, message: str) -> Step:
        return self._step(StepKind.ERROR, status="error", error=message)

    def end(self, *, status: str = "success", claimed_done: bool | None = True) -> Step:
        return self._step(
            StepKind.END,
            status="ok" if status == "success" else "error",
            detail={"end_status": status, "claimed_done": claimed_done},
        )
