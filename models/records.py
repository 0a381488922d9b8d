"""The records every layer of trajwatch speaks: steps, alerts, dead letters.

A :class:`Step` is the one normalised record a detector sees, whatever the source
(OTLP span, session event, recorded file). An :class:`Alert` is what a detector
raises. Both are frozen, slotted value objects with no behaviour beyond
serialisation helpers; the ORM rows that store them never leave ``models.store``.

Times are integer nanoseconds since the Unix epoch, in *event time*: the time
the runtime says a thing happened, never the time trajwatch saw it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class StepKind(StrEnum):
    """What a step is. The set is closed: decoders map every input onto it (all but
    ``SILENCE``, which only the pipeline places)."""

    START = "start"
    MODEL_CALL = "model_call"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    EGRESS = "egress"
    APPROVAL = "approval"
    CHECKPOINT = "checkpoint"
    COMPACTION = "compaction"
    ERROR = "error"
    END = "end"
    SILENCE = "silence"
    """Placed by the pipeline, never decoded: the session has been silent while the
    input's event time moved on (:mod:`ingest.pipeline.silence`). Its ``ts`` is the
    pipeline's clock at a bound the silence crossed; a detector that reads no silence
    ignores it like any kind it does not read."""


class Severity(StrEnum):
    INFO = "info"
    WARN = "warn"
    CRITICAL = "critical"


class Action(StrEnum):
    """What an alert recommends the circuit breaker (or the runtime) does: ``notify`` a
    person, ``kill`` the run, ``rollback`` it to its last clean checkpoint, or ``resume``
    a run whose worker died, from its last checkpoint (not a stop: the run goes on)."""

    NOTIFY = "notify"
    KILL = "kill"
    ROLLBACK = "rollback"
    RESUME = "resume"


UNSEQUENCED = -1
"""``Step.seq`` of a step the pipeline has not ordered yet."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One thing an agent did, normalised.

    Identity: ``step_id`` is stable across deliveries and sources. A tool call
    and its result are keyed by the session and the call id when the runtime
    gives one (so the same call seen in a span and in a session event is one
    step); otherwise by the source ids (``trace:span`` or ``session#seq``).

    Order: ``seq`` is the position in the session, assigned by the pipeline
    after ordering by ``(ts, source order)``; it is ``UNSEQUENCED`` before.

    Text fields (``arguments``, ``result``, ``text``, ``error``, ``egress_url``)
    are redacted before a Step is built: nothing downstream sees a credential.
    """

    step_id: str
    session_id: str
    kind: StepKind
    ts: int
    seq: int = UNSEQUENCED
    end_ts: int | None = None
    agent: str | None = None
    tool: str | None = None
    action: str | None = None
    """Canonical action signature: tool plus arguments with volatile parts normalised."""
    call_id: str | None = None
    arguments: str | None = None
    """Tool arguments as canonical JSON text (sorted keys), redacted."""
    result: str | None = None
    text: str | None = None
    """Free text the step carries: the goal of a start, model output, a compaction summary."""
    status: str | None = None
    """``ok`` or ``error`` where the source says; None where it does not. A tool result may
    also be ``cancelled``: the call was not run (or not to its end) because a sibling of its
    parallel batch failed or the runtime cancelled it (an interrupted turn); its ``error``
    keeps the runtime's text. A cancelled result says nothing about the call itself."""
    error: str | None = None
    model: str | None = None
    finish_reason: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    model_session: int = 0
    """Index of the model session: 0 until the first compaction, +1 after each."""
    egress_host: str | None = None
    egress_url: str | None = None
    egress_method: str | None = None
    http_status: int | None = None
    idempotency_key: str | None = None
    parent_step_id: str | None = None
    """For egress: the tool call that caused it. For a tool result: its call."""
    source: str = "event"
    """``otlp``, ``event``, ``trail``, ``agentdojo``, ``claude_code`` or ``codex``: the
    decoder that made the step."""
    source_ref: str = ""
    """Where to look in the source: ``trace_id:span_id`` or ``session_id#seq``."""
    detail: Mapping[str, Any] = field(default_factory=dict)
    """Kind-specific facts, JSON-serialisable: workspace, policy_id, budget
    (start); checkpoint_id, commit (checkpoint); tokens_before, tokens_after,
    inferred (compaction); approved (approval); claimed_done (end)."""

    def with_(self, **changes: Any) -> Step:
        """A copy with ``changes`` applied (as dataclasses.replace, named for brevity).

        Copied field by field rather than through ``__init__``: the pipeline copies every
        step once or twice, and ``replace`` on these 35 fields costs ~9 µs against ~5.
        Step has no ``__post_init__`` and every field is an init field, so it is the same.
        """
        unknown = changes.keys() - _STEP_FIELD_SET
        if unknown:
            raise TypeError(f"Step has no field {sorted(unknown)[0]!r}")
        twin = _copy_step(self)
        for name, value in changes.items():
            _set(twin, name, value)
        return twin

    def ref(self) -> dict[str, Any]:
        """The step reference alerts use as evidence: what a person looks up."""
        return {"seq": self.seq, "step_id": self.step_id, "source_ref": self.source_ref}

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled (and deep-copied) as its field values in order: session checkpoints
        hold steps and are written with every commit, and the generic slotted-dataclass
        state (a dict built through ``fields()`` per step) pickles ~1.4x and loads ~1.7x
        slower. States pickled the generic way still load (``__setstate__`` stays)."""
        return _step_of, _get_step_fields(self)


def step_to_json(step: Step) -> dict[str, Any]:
    """``step`` as a JSON object of its fields (what crosses a process boundary, such as
    Kafka's repartition topic); :func:`step_from_json` gives the same step back.

    >>> step = Step(step_id="s/1", session_id="s", kind=StepKind.TOOL_CALL, ts=1,
    ...             tool="bash", detail={"cluster": 2, "progress": 0.5})
    >>> import json
    >>> step_from_json(json.loads(json.dumps(step_to_json(step)))) == step
    True
    """
    out = dict(zip(_STEP_FIELD_NAMES, _get_step_fields(step), strict=True))
    out["kind"] = str(step.kind)
    out["detail"] = dict(step.detail)
    return out


def step_from_json(data: Mapping[str, Any]) -> Step:
    """The step :func:`step_to_json` wrote; raises ``TypeError``/``ValueError`` for an
    object that is not one (an unknown field, an unknown kind)."""
    unknown = data.keys() - _STEP_FIELD_SET
    if unknown:
        raise TypeError(f"Step has no field {sorted(unknown)[0]!r}")
    detail = dict(data.get("detail") or {})
    return Step(**{**data, "kind": StepKind(data["kind"]), "detail": detail})


_STEP_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Step))
_STEP_FIELD_SET = frozenset(_STEP_FIELD_NAMES)
_get_step_fields = operator.attrgetter(*_STEP_FIELD_NAMES)
_new_step = object.__new__
_set = object.__setattr__


def _step_of(*values: Any) -> Step:
    """The step whose fields, in order, are ``values`` (see ``Step.__reduce__``)."""
    step = _new_step(Step)
    for name, value in zip(_STEP_FIELD_NAMES, values, strict=True):
        _set(step, name, value)
    return step


def step_copier(cls: type[Step]) -> Any:
    """A function copying a step's fields into a new instance of ``cls`` (``Step`` or a
    subclass that adds slots), written out one statement a field: a third of the cost of
    looping over the 35 names."""
    lines = ["def copy_step(step):", "    twin = new(cls)"]
    lines += [f"    set_(twin, {name!r}, step.{name})" for name in _STEP_FIELD_NAMES]
    lines.append("    return twin")
    namespace: dict[str, Any] = {"new": _new_step, "set_": _set, "cls": cls}
    exec("\n".join(lines), namespace)  # our own field names only
    return namespace["copy_step"]


_copy_step = step_copier(Step)


def step_replacer(names: tuple[str, ...]) -> Any:
    """A function ``replace(step, *values)``: ``step.with_`` of the fields ``names`` (in
    that order) set to ``values``, written out one statement a field like
    :func:`step_copier`: no keyword dict, no check of the names per call (checked here,
    once). For a copy made for every step (the pipeline places each one)."""
    unknown = set(names) - _STEP_FIELD_SET
    if unknown or len(set(names)) != len(names):
        raise TypeError(f"Step has no field {sorted(unknown)[0]!r}" if unknown else "repeated")
    arguments = [f"value_{i}" for i in range(len(names))]
    given = dict(zip(names, arguments, strict=True))
    lines = [f"def replace(step, {', '.join(arguments)}):", "    twin = new(cls)"]
    lines += [
        f"    set_(twin, {name!r}, {given.get(name, f'step.{name}')})" for name in _STEP_FIELD_NAMES
    ]
    lines.append("    return twin")
    namespace: dict[str, Any] = {"new": _new_step, "set_": _set, "cls": Step}
    exec("\n".join(lines), namespace)  # our own field names only
    return namespace["replace"]


def alert_id(detector: str, session_id: str, onset_step_id: str, severity: str = "") -> str:
    """Deterministic alert id: the same detector, session, onset (and severity) give the
    same id, live or replayed, so storing and delivering an alert twice is a no-op.

    The severity is part of the id so that a detector that escalates the same
    finding (``warn`` after three cycles, ``critical`` after eight) raises two
    alerts, each delivered once."""
    key = f"{detector}\x1f{session_id}\x1f{onset_step_id}"
    if severity:
        key += f"\x1f{severity}"
    return "al_" + hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True, kw_only=True)
class Alert:
    """A detector's finding about one session, with what a person needs to check it."""

    alert_id: str
    session_id: str
    detector: str
    severity: Severity
    score: float
    onset_seq: int
    onset_step_id: str
    evidence: tuple[Mapping[str, Any], ...]
    """Step references (:meth:`Step.ref`) that show the problem, onset first."""
    reason: str
    action: Action = Action.NOTIFY
    checkpoint_id: str | None = None
    """For ``rollback``: the last clean checkpoint before the onset; for ``resume``: the
    checkpoint to resume from (else the session's last)."""
    ts: int = 0
    """Event time of the step that raised the alert."""
    raised_seq: int = UNSEQUENCED
    """Seq of the step on which the detector fired (>= onset_seq)."""
    superseded: str | None = None
    """Why the alert no longer stands, when it does not: its session, judged again in
    event-time order after a late step, did not raise it (:mod:`ingest.pipeline.rejudge`).
    Kept with its actions' audit trail; a settled session's standing alerts are those
    without it."""

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape of ``trajwatch replay --json``; scripts depend on it."""
        return {
            "id": self.alert_id,
            "session_id": self.session_id,
            "detector": self.detector,
            "severity": str(self.severity),
            "score": self.score,
            "onset_step": self.onset_seq,
            "onset_step_id": self.onset_step_id,
            "raised_at_step": self.raised_seq,
            "evidence": [dict(e) for e in self.evidence],
            "reason": self.reason,
            "action": str(self.action),
            "checkpoint_id": self.checkpoint_id,
            "superseded": self.superseded,
        }


def delivery_id(alert_id: str, endpoint: str, action: Action) -> str:
    """The outbox key and Standard Webhooks ``webhook-id`` of one action sent to one
    endpoint: the same on every retry and on every replay of the same input.

    >>> delivery_id("al_1f", "ops", Action.KILL)
    'al_1f:ops:kill'
    """
    return f"{alert_id}:{endpoint}:{action}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One row of the webhook outbox: an action the policy decided for an alert, for one
    endpoint, and where its delivery stands.

    ``status`` is ``pending`` (to send at ``next_attempt_at``), ``delivered``, ``dead``
    (every attempt failed), ``disabled`` (held: the endpoint answered 410), ``shadow``
    (shadow mode: recorded, never sent) or ``suppressed`` (a per-session cooldown).
    ``payload`` is the JSON body every attempt sends; times are wall-clock ns except
    ``alert_ts`` (the alert's event time)."""

    delivery_id: str
    alert_id: str
    endpoint: str
    action: Action
    mode: str = "enforce"
    status: str = "pending"
    session_id: str | None = None
    agent: str | None = None
    alert_ts: int | None = None
    decision: str | None = None
    """Why the policy decided this (the rule, a rollback's fallback to kill)."""
    payload: str | None = None
    attempts: int = 0
    next_attempt_at: int | None = None
    last_error: str | None = None
    last_status_code: int | None = None
    created: int = 0
    updated: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadLetter:
    """An input that could not become steps, kept whole with the reason.

    ``location`` says where it came from (``path:line``, ``kafka:topic/partition@offset``,
    ``http:/v1/traces``) plus where inside (``resource_spans[0].scope_spans[1].spans[3]``).
    """

    source: str
    location: str
    reason: str
    payload: bytes
    content_type: str = "application/octet-stream"

    @property
    def dead_letter_id(self) -> str:
        """Stable id: the same bad input seen twice is stored once."""
        h = hashlib.sha256()
        for part in (self.source, self.location, self.reason):
            h.update(part.encode("utf-8", "replace"))
            h.update(b"\x1f")
        h.update(self.payload)
        return "dl_" + h.hexdigest()[:32]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceWrite:
    """One place of a workspace (``workspace_key``: :func:`features.session.workspace.
    workspace_key`) that a session's step wrote: a workspace-relative file path, or
    ``@head``/``@remote``/``*`` (the branch, the remote branch, the whole tree; see
    :mod:`features.session.writes`), with what was done (``op``) and, for a reset or a
    checkpoint, the revision (``target``)."""

    workspace_key: str
    path: str
    op: str
    session_id: str
    step_id: str
    seq: int
    ts: int
    source_ref: str = ""
    target: str | None = None

    def ref(self) -> dict[str, Any]:
        """The evidence reference of the step, naming its session (it may be another
        session's step in an alert: :mod:`detectors.workspace_conflict`)."""
        return {
            "seq": self.seq,
            "step_id": self.step_id,
            "source_ref": self.source_ref,
            "session_id": self.session_id,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """What is known about a session beyond its steps (from ``session_start`` or the
    agent span): the goal anchor, the policy and budget it runs under, and where it works
    (:mod:`features.session.workspace`: ``workspace`` is the working directory,
    ``revision`` the commit checked out at the start), and the run it continues
    (``predecessor``: the session id of a dead or forked run this one resumes as a new
    session, :mod:`features.session.lineage`)."""

    session_id: str
    goal: str | None = None
    agent: str | None = None
    workspace: str | None = None
    repository: str | None = None
    policy_id: str | None = None
    budget: Mapping[str, Any] = field(default_factory=dict)
    started_ts: int | None = None
    ended_ts: int | None = None
    end_status: str | None = None
    claimed_done: bool | None = None
    # added after the first release: new fields go last (see __setstate__)
    branch: str | None = None
    revision: str | None = None
    host: str | None = None
    predecessor: str | None = None

    def __setstate__(self, state: Any) -> None:
        """Unpickled from a session's stored state: the field values in order, as the
        slotted dataclass pickles them. A state pickled before later fields were added
        is shorter: those fields take their defaults (the generic ``__setstate__`` would
        leave them unset, and reading one would raise)."""
        values = list(state)
        for i, f in enumerate(dataclasses.fields(self)):
            if i < len(values):
                value = values[i]
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            else:
                value = f.default
            object.__setattr__(self, f.name, value)
