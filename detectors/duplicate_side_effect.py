"""The same side effect executed twice: a replayed payment, e-mail, push or deploy.

Flags a side-effecting tool call executed again after it succeeded: a call carrying an
``idempotency_key`` an earlier call already used without an error, or a repeat with
byte-identical arguments (the stored canonical JSON) of an earlier call that succeeded.
For a state-carrying action (push, deploy, publish, apply, upload) an edit, commit or
other mutation in between makes the repeat new work. A call the runtime cancelled before
it ran had no effect: it is no first execution.

Reads tool calls (whether a call has an effect, and of what kind, from its tool name,
shell command or HTTP method: :func:`features.calls.step_features.features_of`; its
arguments and idempotency key) and tool results (their status).

Raises one finding per replayed call, onset = its first replay: ``critical`` for payments
and sends (the duplicate reached someone else), ``warn`` for the rest, and ``critical``
once a warn-class call is replayed ``critical_replays`` times (evidence: the first
execution and the replays, <= 20). Both recommend NOTIFY: the harm is done, a person has
to reverse it. ``score``: 0 but on a call that replays an effect: 1.0 for a payment or a
send, for a warn-class call ``WARN_SCORE`` (0.6) at its first replay rising evenly to 1.0
at ``critical_replays``; ``thresholds``: ``warn`` 0.6, ``critical`` 1.0. The parameters'
meaning: :class:`DuplicateSideEffect`. State: ``window`` calls and ``window`` keys, least
recently used out (~7 KB pickled at 64).

A run resumed as a *new* session (a dead worker's work started again under another session
id, a forked conversation: :mod:`features.session.lineage`) is judged against what the run
it continues had completed: the pipeline reads that run's completed side effects once, when
the link is first seen, and hands them over on the step that carries it (``detail``
:data:`PREDECESSOR_EFFECTS`, :func:`completed_effects`; :mod:`ingest.pipeline.predecessors`).
A replay of one of them names that run, its step and the result it had.

What counts as a side effect, and why: ``docs/detectors/single_module.md``.
>>> from detectors.testing import Session
>>> s = Session("dup", goal="Pay the December rent")
>>> pay = {"recipient": "DE89370400440532013000", "amount": 1200}
>>> steps = [s.start(), *s.tool("send_money", pay), *s.tool("get_balance", {}),
...          *s.tool("send_money", pay)]
>>> d = DuplicateSideEffect()
>>> [(a.onset_seq, str(a.severity)) for st in steps for a in d.update(st)]
[(5, 'critical')]

A deletion replayed four times: a warning at the first replay, critical at the third,
both with the first replay as onset.

>>> s = Session("del", goal="Tidy the shared drive")
>>> steps = [s.start(), *[st for _ in range(5) for st in s.tool("delete_file", {"id": "7"})]]
>>> d = DuplicateSideEffect()
>>> [(a.raised_seq, a.onset_seq, str(a.severity)) for st in steps for a in d.update(st)]
[(3, 3, 'warn'), (7, 3, 'critical')]
>>> d = DuplicateSideEffect()
>>> scores = [(st.kind, d.update(st), d.score) for st in steps]
>>> [score for kind, _, score in scores if kind == "tool_call"]  # 0 on the results
[0.0, 0.6, 0.8, 1.0, 1.0]

A resumer in a new session sending again the e-mails its dead predecessor had sent; the call
the predecessor never finished is new work.

>>> dead = Session("dead", goal="Notify the customers")
>>> mail = {"to": "customers@example.com", "template": "incident-42"}
>>> before = [dead.start(), *dead.tool("send_email", mail), dead.call("post_status", {"id": 42})]
>>> effects = completed_effects(before)
>>> [(e["tool"], e["seq"]) for e in effects]
[('send_email', 1)]
>>> new = Session("new", goal="Continue the dead run")
>>> start = new.start().with_(detail={"predecessor": "dead", PREDECESSOR_EFFECTS: effects})
>>> d = DuplicateSideEffect()
>>> steps = [start, *new.tool("post_status", {"id": 42}), *new.tool("send_email", mail)]
>>> [(a.onset_seq, "session dead" in a.reason) for st in steps for a in d.update(st)]
[(3, True)]
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from detectors.base import MAX_EVIDENCE, Detector, StepRef, make_alert
from detectors.registry import register
from features.calls.step_features import features_of
from models.records import Action, Alert, Severity, Step, StepKind

__all__ = ["PREDECESSOR_EFFECTS", "DuplicateSideEffect", "call_digest", "completed_effects"]

# enum members bound once: a module global is cheaper than a class attribute lookup
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT
_LAPSES = frozenset({StepKind.START, StepKind.ERROR, StepKind.SILENCE})


def _lapse_words(step: Step) -> str:
    """A lapse (see ``DuplicateSideEffect._lapse``) in words."""
    if step.kind == StepKind.START:
        return "a new start of the session"
    if step.kind == StepKind.SILENCE:
        silent = step.detail.get("silence_ms") if isinstance(step.detail, Mapping) else None
        minutes = f" for {silent // 60_000} min" if isinstance(silent, int) else ""
        return f"silent{minutes}"
    return "runtime error: " + " ".join((step.error or "").split())[:80]


_SEVERITY = {"money": Severity.CRITICAL, "send": Severity.CRITICAL}
WARN_SCORE = 0.6
"""The score of a warn-class call's first replay (and of its warning)."""
_WHAT = {
    "money": "a payment",
    "send": "a message sent to someone",
    "state": "a state-carrying action (push/deploy/publish) with no change in between",
    "effect": "an action with an external effect",
}


@dataclass(frozen=True, slots=True)
class _Finding:
    """One replayed call: what was reported. Frozen and replaced, never mutated, so the
    two ledgers may hold the same one and a state round-trip cannot split it."""

    refs: tuple[StepRef, ...]  # first execution, first replay, later replays (<= MAX_EVIDENCE)
    replays: int
    level: int  # severity raised so far: 0 none, 1 warn, 2 critical


@dataclass(slots=True)
class _Entry:
    """One remembered side-effecting call: identity for evidence, outcome, context."""

    seq: int
    step_id: str
    source_ref: str
    ts: int
    cls: str
    epoch: int
    status: str | None = None  # None until its result arrives
    finding: _Finding | None = None  # once the call has been replayed
    # added later: new fields go last (see __setstate__)
    session: str | None = None  # the run this session continues, for an inherited call
    result: str | None = None  # an inherited call's result (an excerpt)

    def __getstate__(self) -> tuple[Any, ...]:
        """The field values in order: smaller than the slot names with their values."""
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        """Unpickled from :meth:`__getstate__`'s values, or from ``(None, {slot: value})``
        (how pickle gave a slotted object's state before). A state from before later
        fields were added lacks them: they take their defaults (the generic restore would
        leave them unset)."""
        names = [f.name for f in dataclasses.fields(self)]
        if len(state) == 2 and state[0] is None and isinstance(state[1], dict):
            given = state[1]
        else:
            given = dict(zip(names, state, strict=False))
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, given.get(f.name, f.default))


PREDECESSOR_EFFECTS = "predecessor_effects"
"""The step ``detail`` key under which the pipeline hands a session the completed side
effects of the run it continues (:func:`completed_effects`)."""
RESULT_CHARS = 160
"""How much of an inherited call's result its record keeps, for the reason."""


def call_digest(tool: str | None, arguments: str | None) -> str:
    """The identity of a call by its tool and (canonical, stored) arguments."""
    return hashlib.blake2b(f"{tool}\x1f{arguments or ''}".encode(), digest_size=8).hexdigest()


def completed_effects(steps: Iterable[Step], *, window: int = 64) -> list[dict[str, Any]]:
    """The side-effecting calls among ``steps`` (one session's tool calls and results, in
    ``seq`` order; other kinds are skipped) that completed: a result arrived that is no
    error and no cancellation. A call without its result (the one a dead worker was in)
    did not complete. The last ``window`` of them, oldest first, as JSON records: the
    call's ``session_id``, ``step_id``, ``seq``, ``ts``, ``source_ref``, ``tool``, effect
    class ``cls``, ``digest`` (:func:`call_digest`; None when its arguments are unknown),
    idempotency ``key``, result ``status`` and ``result`` (<= :data:`RESULT_CHARS`).
    Pure; bounded by ``window`` plus the calls awaiting a result (<= 16)."""
    pending: dict[str, dict[str, Any]] = {}
    done: list[dict[str, Any]] = []
    for step in steps:
        if step.kind == _TOOL_CALL:
            cls, _ = features_of(step).effect
            key = step.idempotency_key
            if cls is None and not key:
                continue
            known = cls is not None and not features_of(step).unknown_arguments
            pending[step.step_id] = {
                "session_id": step.session_id,
                "step_id": step.step_id,
                "seq": step.seq,
                "ts": step.ts,
                "source_ref": step.source_ref,
                "tool": step.tool,
                "cls": cls or "effect",
                "digest": call_digest(step.tool, step.arguments) if known else None,
                "key": key or None,
            }
            while len(pending) > 16:
                del pending[next(iter(pending))]
        elif step.kind == _TOOL_RESULT:
            record = pending.pop(step.parent_step_id or "", None)
            status = step.status or "unknown"
            if record is None or status in ("error", "cancelled"):
                continue
            # a bounded head is read: whitespace runs collapse to one space
            head = " ".join((step.result or "")[: 8 * RESULT_CHARS].split())[:RESULT_CHARS]
            done.append({**record, "status": status, "result": head or None})
            del done[:-window]
    return done


@register
class DuplicateSideEffect(Detector):
    """Flags a side-effecting tool call executed again after it succeeded.

    Contract: ``update`` consumes one session's steps in order; it returns one alert
    per replayed call (onset = the first replay, evidence = the replay and the first
    execution), and one more, critical, if a warn-class call is replayed
    ``critical_replays`` times (same onset, evidence = every replay so far, ≤ 20).
    Bounded: ``window`` entries per ledger. No I/O, no clock.

    Parameters
    ----------
    window:
        How many recent side-effecting calls and idempotency keys are remembered.
    critical_replays:
        Replays of one warn-class call (a push, a deletion, a POST) that make it
        critical: runtime retries replay a call once or twice, an effect executed four
        times is an agent looping on it.
    """

    name = "duplicate_side_effect"
    thresholds_fixed = True

    def __init__(self, *, window: int = 64, critical_replays: int = 3) -> None:
        if not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be an int >= 1, got {window!r}")
        if not isinstance(critical_replays, int) or critical_replays < 1:
            raise ValueError(f"critical_replays must be an int >= 1, got {critical_replays!r}")
        self.window = window
        self.critical_replays = critical_replays
        self._reset()

    def _reset(self) -> None:
        self._calls: dict[str, _Entry] = {}  # digest of tool + arguments -> latest call
        self._keys: dict[str, _Entry] = {}  # idempotency key -> latest call
        self._pending: dict[str, tuple[str, str | None]] = {}  # call step id -> (digest, key)
        # call step id -> the ledger entries (by arguments, by key) its call displaced, put
        # back if the call is cancelled
        self._displaced: dict[str, tuple[_Entry | None, _Entry | None]] = {}
        self._epoch = 0  # number of workspace mutations seen so far
        self._lapse: tuple[int, str] | None = None
        """The last sign that the session's worker stopped and another took over: a second
        start (a resumed worker), a runtime error, or the pipeline's silence step (seq,
        what): named in a replay's reason when it lies between the two executions."""
        self._score = 0.0  # this step's replay, if it is one (_replay_score)

    def _put(self, ledger: dict[str, _Entry], key: str, entry: _Entry) -> None:
        ledger.pop(key, None)
        ledger[key] = entry
        while len(ledger) > self.window:
            del ledger[next(iter(ledger))]

    @property
    def thresholds(self) -> dict[str, float]:
        """The scores its alerts carry: ``warn`` 0.6, ``critical`` 1.0."""
        return {"warn": WARN_SCORE, "critical": 1.0}

    def update(self, step: Step) -> list[Alert]:
        kind = step.kind
        self._score = 0.0
        if kind in _LAPSES:
            if kind != StepKind.START or step.seq > 0:
                self._lapse = (step.seq, _lapse_words(step))
            if kind == StepKind.START:
                inherited = step.detail.get(PREDECESSOR_EFFECTS)
                if isinstance(inherited, list):
                    self._inherit(inherited)
            return []
        if kind == _TOOL_CALL:
            return self._on_call(step)
        if kind == _TOOL_RESULT:
            pending = self._pending.pop(step.parent_step_id or "", None)
            displaced = self._displaced.pop(step.parent_step_id or "", (None, None))
            if pending is not None:
                status = step.status or "unknown"
                digest, key = pending
                for ledger, k, earlier in (
                    (self._calls, digest, displaced[0]),
                    (self._keys, key, displaced[1]),
                ):
                    entry = ledger.get(k) if k else None
                    if not k or entry is None or entry.step_id != step.parent_step_id:
                        continue
                    if status != "cancelled":
                        entry.status = status
                    elif earlier is not None:
                        # The runtime cancelled the call before it ran: no effect, so the
                        # earlier execution is again the one a later call would replay.
                        # A replay already reported stays reported (its finding is kept).
                        ledger[k] = replace(earlier, finding=entry.finding)
                    else:
                        del ledger[k]
        return []

    def _inherit(self, records: list[Any]) -> None:
        """Remember the completed calls of the run this session continues
        (:func:`completed_effects` records), as of now (a push inherited is replayed by
        a push with no change made here since); a call this session made itself stays."""
        for record in records:
            if not isinstance(record, Mapping) or not isinstance(record.get("session_id"), str):
                continue
            try:
                entry = _Entry(
                    int(record["seq"]),
                    str(record["step_id"]),
                    str(record["source_ref"]),
                    int(record["ts"]),
                    str(record["cls"]),
                    self._epoch,
                    status=str(record["status"]),
                    session=record["session_id"],
                    result=record.get("result") if isinstance(record.get("result"), str) else None,
                )
            except (KeyError, TypeError, ValueError):
                continue
            for ledger, k in ((self._calls, record.get("digest")), (self._keys, record.get("key"))):
                if isinstance(k, str) and k and k not in ledger:
                    self._put(ledger, k, replace(entry))

    def _on_call(self, step: Step) -> list[Alert]:
        arguments = step.arguments or ""
        cls, mutation = features_of(step).effect
        key = step.idempotency_key
        if cls is None and not key:
            if mutation:
                self._epoch += 1
            return []
        digest = call_digest(step.tool, arguments)
        entry = _Entry(
            step.seq, step.step_id, step.source_ref, step.ts, cls or "effect", self._epoch
        )
        alerts: list[Alert] = []
        match: _Entry | None = None
        same = ""
        by_key = self._keys.get(key) if key else None
        # arguments not recorded or masked: unknown, never "identical arguments"
        known = cls is not None and not features_of(step).unknown_arguments
        by_call = self._calls.get(digest) if known else None
        if by_key is not None and by_key.status != "error":
            match, same = by_key, f"idempotency key {key!r}"
        elif (
            by_call is not None
            and by_call.status not in (None, "error")
            and not (cls == "state" and by_call.epoch != self._epoch)
        ):
            match, same = by_call, "identical arguments"
        # the finding follows the call across retries after errors; new state (an edit
        # before a push) makes new work, and a new finding
        prior = by_key if by_key is not None else by_call
        finding = None
        if prior is not None and not (prior.cls == "state" and prior.epoch != self._epoch):
            finding = prior.finding
        if match is not None:
            finding, alert = self._replayed(step, match, finding, same)
            if alert is not None:
                alerts.append(alert)
        entry.finding = finding
        if known:
            self._put(self._calls, digest, entry)
        if key:
            self._put(self._keys, key, _Entry(**{f: getattr(entry, f) for f in entry.__slots__}))
        self._pending[step.step_id] = (digest, key)
        while len(self._pending) > 16:  # results arrive right after their call
            del self._pending[next(iter(self._pending))]
        if by_call is not None or by_key is not None:
            self._displaced[step.step_id] = (by_call, by_key)
            while len(self._displaced) > 16:
                del self._displaced[next(iter(self._displaced))]
        if mutation:
            self._epoch += 1
        return alerts

    def _replayed(
        self, step: Step, earlier: _Entry, finding: _Finding | None, same: str
    ) -> tuple[_Finding, Alert | None]:
        """Count a replay of ``earlier``'s call; the alert it raises, if any: the first
        replay, or the one that makes the finding critical."""
        ref = StepRef.of(step)
        if finding is None:
            first = StepRef(
                earlier.session or step.session_id,
                earlier.step_id,
                earlier.seq,
                earlier.ts,
                earlier.source_ref,
            )
            finding = _Finding(refs=(first, ref), replays=1, level=0)
        elif finding.level < 2:  # once critical, nothing more to report: stop collecting
            refs = (*finding.refs, ref) if len(finding.refs) < MAX_EVIDENCE else finding.refs
            finding = replace(finding, refs=refs, replays=finding.replays + 1)
        else:
            finding = replace(finding, replays=finding.replays + 1)
        severity = _SEVERITY.get(earlier.cls, Severity.WARN)
        if finding.replays >= self.critical_replays:
            severity = Severity.CRITICAL
        level = 2 if severity == Severity.CRITICAL else 1
        self._score = self._replay_score(finding.replays, level)
        if level <= finding.level:
            return finding, None
        finding = replace(finding, level=level)
        return finding, self._alert(step, earlier, finding, severity, same)

    def _replay_score(self, replays: int, level: int) -> float:
        """A replay's score: 1.0 when critical; a warn-class call's climbs from WARN_SCORE
        at its first replay to 1.0 at ``critical_replays``."""
        if level == 2 or self.critical_replays <= 1:
            return 1.0
        return WARN_SCORE + (1.0 - WARN_SCORE) * (replays - 1) / (self.critical_replays - 1)

    def _alert(
        self, step: Step, earlier: _Entry, finding: _Finding, severity: Severity, same: str
    ) -> Alert:
        first, onset, *later = finding.refs

        what = _WHAT.get(earlier.cls, _WHAT["effect"])
        inherited = first.session_id != step.session_id
        where = f"step {first.seq}"
        if inherited:
            where += f" of session {first.session_id}, the run this session continues,"
        done = "succeeded" if earlier.status == "ok" else "ran without an error"
        if inherited and earlier.result:
            done += f' (result: "{earlier.result}")'
        if finding.replays == 1:
            reason = (
                f"step {step.seq} repeats {step.tool}, {what}, with the same {same} as "
                f"{where} which already {done}: a replayed side effect (retry of a call "
                "that had taken effect)."
            )
        else:
            reason = (
                f"step {step.seq} repeats {step.tool}, {what}, with the same {same} as "
                f"{where} replayed {finding.replays} times since step {onset.seq} "
                f"(critical from {self.critical_replays}): the side effect is being executed "
                "again and again."
            )
        lapse = self._lapse
        if inherited:
            reason += (
                f" Session {first.session_id} stopped and this session resumed its work: the "
                "resumed run re-issued what the stopped worker had already done."
            )
        elif lapse is not None and first.seq < lapse[0] < step.seq:
            reason += (
                f" Between them the run was interrupted ({lapse[1]}, step {lapse[0]}): a "
                "resumed run re-issued what the stopped worker had already done."
            )
        alert = make_alert(
            self.name,
            onset=onset,
            raised=step,
            evidence=[first, *later, step],
            score=1.0 if severity == Severity.CRITICAL else WARN_SCORE,
            severity=severity,
            reason=reason,
            action=Action.NOTIFY,
        )
        if not inherited:
            return alert
        # the first execution is the other session's step: its reference names that session
        evidence = tuple(
            {**ref, "session_id": first.session_id} if ref["step_id"] == first.step_id else ref
            for ref in alert.evidence
        )
        return replace(alert, evidence=evidence)
