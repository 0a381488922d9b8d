"""An agent's history of sessions, and the reference a new session is judged against.

:class:`AgentHistory` keeps, per agent, the :class:`Record` of each session that ended
(its behaviour summary, start and end event times), ordered by ``(ended_ts,
session_id)`` whatever order the sessions were learnt in, at most ``keep`` of them (the
latest ends): a session learnt twice (a replay, a re-judgement) replaces its record. It is
the state the store keeps per agent (:meth:`AgentHistory.dumps`, a versioned pickle).

:func:`fit` builds a :class:`Reference` from the records ended *before* a session started:
river's :class:`~river.anomaly.HalfSpaceTrees` learnt online, one session after another in
end order, over the last ``window`` of them, each session's features taken against the
sessions before it (its tool mix against their usual mix, its hosts against theirs); plus
the features' upper quantiles, which the alert quotes. Same records, same parameters: the
same reference (the trees are seeded) - whatever order the sessions arrived or were learnt
in.

>>> from features.session.behaviour import BehaviourSummary
>>> h = AgentHistory(keep=3)
>>> for i in (4, 1, 3, 2, 5):  # learnt out of end order
...     h.learn(Record(f"s{i}", started_ts=i * 10, ended_ts=i * 10 + 5,
...                    summary=BehaviourSummary(steps=10)))
>>> [r.session_id for r in h.records], [r.session_id for r in h.before(41)]
(['s3', 's4', 's5'], ['s3'])
"""

from __future__ import annotations

import bisect
import io
import itertools
import pickle
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from river.anomaly import HalfSpaceTrees

from features.session.behaviour import FEATURES, BehaviourSummary, Usual, features, ratios

__all__ = ["VERSION", "AgentHistory", "Record", "Reference", "fit"]

VERSION = 1
"""Bumped when :class:`Record` or :class:`BehaviourSummary` changes layout: a stored history
of another version is not read (the agent starts a new history, cold)."""
MAX_KNOWN_HOSTS = 512
"""Hosts a reference keeps (those of the latest sessions): bounded state per session."""


@dataclass(frozen=True, slots=True)
class Record:
    """One ended session of an agent, as the history keeps it."""

    session_id: str
    started_ts: int
    ended_ts: int
    summary: BehaviourSummary


class AgentHistory:
    """The records of an agent's ended sessions, in end order, at most ``keep``."""

    def __init__(self, keep: int = 256) -> None:
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.keep = keep
        self.records: list[Record] = []

    def learn(self, record: Record) -> None:
        """Add ``record`` in its end-order place (replacing an earlier record of its
        session); the oldest ends beyond ``keep`` are forgotten."""
        self.records = [r for r in self.records if r.session_id != record.session_id]
        keys = [(r.ended_ts, r.session_id) for r in self.records]
        self.records.insert(bisect.bisect(keys, (record.ended_ts, record.session_id)), record)
        del self.records[: -self.keep]

    def before(self, ts: int) -> list[Record]:
        """The records of sessions that ended strictly before event time ``ts``."""
        return [r for r in self.records if r.ended_ts < ts]

    def dumps(self) -> bytes:
        """The history as the store keeps it (compressed pickle of plain records)."""
        return zlib.compress(pickle.dumps(self.records, protocol=pickle.HIGHEST_PROTOCOL), 6)

    @classmethod
    def loads(cls, data: bytes, *, keep: int) -> AgentHistory:
        """What :meth:`dumps` wrote (of this :data:`VERSION`; the caller checks it)."""
        history = cls(keep)
        records = pickle.Unpickler(io.BytesIO(zlib.decompress(data))).load()  # our own store
        keys = [(r.ended_ts, r.session_id) for r in records]
        ordered = all(a < b for a, b in itertools.pairwise(keys))
        if ordered and len({k[1] for k in keys}) == len(keys):
            # as dumps writes them (in end order, one per session): learning them one by
            # one appends each and keeps the latest ``keep`` - that list, without the
            # quadratic cost of a learn per record (a full history's load, ~2 ms, at every
            # commit that learns or attaches a session of the agent)
            history.records = list(records[-keep:])
            return history
        for record in records:
            history.learn(record)
        return history


@dataclass(slots=True)
class Reference:
    """What a session of an agent is judged against: the agent's model as of its start."""

    sessions: int
    """How many prior sessions the model learnt."""
    usual: Usual
    """The agent's usual tool mix, error rate and tokens per step, over those sessions."""
    hosts: frozenset[str]
    """The hosts those sessions reached (the latest :data:`MAX_KNOWN_HOSTS`)."""
    model: HalfSpaceTrees
    upper: dict[str, float]
    """Per feature, the history's upper quantile (``quantile``)."""
    highest: dict[str, float]
    """Per feature, the history's largest value."""

    def features(self, summary: BehaviourSummary) -> dict[str, float]:
        """``summary``'s features against this history."""
        return features(summary, self.usual, self.hosts)


def fit(
    records: Sequence[Record],
    *,
    window: int,
    n_trees: int,
    height: int,
    seed: int,
    quantile: float,
) -> Reference:
    """The :class:`Reference` learnt from ``records`` (in end order; the last ``window``)."""
    used = list(records)[-window:]
    mix: Counter[str] = Counter()
    hosts: dict[str, None] = {}
    rows: list[dict[str, float]] = []
    own: list[tuple[float, float]] = []
    for record in used:
        rows.append(features(record.summary, _usual(mix, own), hosts))
        mix.update(dict(record.summary.tools))
        own.append(ratios(record.summary))
        for host in record.summary.hosts:
            hosts.pop(host, None)
            hosts[host] = None  # most recent last
    model = HalfSpaceTrees(n_trees=n_trees, height=height, window_size=max(1, len(rows)), seed=seed)
    for row in rows:
        model.learn_one(row)  # one window: the reference mass is the whole history
    upper = {f: _quantile([r[f] for r in rows], quantile) for f in FEATURES}
    highest = {f: max((r[f] for r in rows), default=0.0) for f in FEATURES}
    return Reference(
        sessions=len(rows),
        usual=_usual(mix, own),
        hosts=frozenset(list(hosts)[-MAX_KNOWN_HOSTS:]),
        model=model,
        upper=upper,
        highest=highest,
    )


def _usual(mix: Counter[str], own: list[tuple[float, float]]) -> Usual:
    """What the sessions so far usually did: their tool mix's shares, their mean error
    rate and tokens per step."""
    total = sum(mix.values())
    shares = {name: n / total for name, n in sorted(mix.items())} if total else {}
    if not own:
        return Usual(shares)
    return Usual(
        shares,
        error_rate=sum(e for e, _ in own) / len(own),
        tokens_per_step=sum(t for _, t in own) / len(own),
    )


def _quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank, 0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
