"""What a pipeline has seen since it started: counters for summaries and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

from models.records import DeadLetter

DEAD_LETTER_EXAMPLES = 5
"""Dead letters kept whole in :class:`Stats` (the rest are only counted)."""


@dataclass(slots=True)
class Stats:
    """What the pipeline has seen since it started (for summaries and metrics)."""

    sessions: set[str] = field(default_factory=set)
    steps: int = 0
    """Distinct steps of the input, whether stored now or already stored before."""
    new_steps: int = 0
    duplicates: int = 0
    dead_letters: int = 0
    first_dead_letters: list[DeadLetter] = field(default_factory=list)
    """The first :data:`DEAD_LETTER_EXAMPLES` dead letters, for summaries to show why."""
    new_alerts: int = 0
    drafts: int = 0
    """Drafts decoded from the input. Once released, each is exactly one of: a step placed
    in its session (``drafts_stepped``), a duplicate of a step stored or placed before
    (``drafts_duplicate``), or a dead letter because a value fits no column
    (``drafts_unstorable``); a draft taken back before its release, a model span's whose
    model parent came later (``drafts_nested``, :mod:`ingest.pipeline.nested_models`), is
    never released. A placed step is stored unless the store refuses it, a last resort
    counted in ``store_rejected`` (and dead-lettered too)."""
    drafts_stepped: int = 0
    drafts_duplicate: int = 0
    drafts_unstorable: int = 0
    drafts_nested: int = 0
    unstorable: int = 0
    """Records dead-lettered because a value fits no column (drafts, steps, alerts,
    session facts); see :mod:`models.storable`."""
    store_rejected: int = 0
    """Placed steps the store still refused (a last resort: the pipeline checks first)."""
    rejudged: int = 0
    """Sessions judged again in event-time order after a late step
    (:mod:`ingest.pipeline.rejudge`), counted once per settling."""
    rejudged_steps: int = 0
    """The steps those re-judgements placed and judged again: their cost."""
    adopted: int = 0
    """Provisional sessions (a trace's steps released before their session was known)
    whose steps a named session adopted (:mod:`ingest.pipeline.adoption`)."""
