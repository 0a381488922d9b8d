"""``trajwatch replay``: recorded files through the live pipeline, as live delivered them.

Each recording (a debug bundle, or the files of one run that share a stem) is one
partition of the same :class:`~ingest.pipeline.engine.Pipeline` the live service runs, with
the same ``lateness_ms`` watermark; its files are merged by the time the live service
would have received each record (:func:`ingest.formats.table.delivered`). So a replay raises
exactly the alerts the live service raised on the same input. Replaying the same files
again stores nothing twice: every step, alert and dead letter has a stable id.

A replay fires no action unless asked (``deliver``): it reports what the action policy
would have fired (``would_fire``). With ``deliver`` the actions' outbox sink joins the
pipeline and the replay waits (up to ``deliver_timeout_s``) for the dispatcher to send
what it queued; alerts already stored by an earlier run are not new, so replaying the
same input again sends no second webhook.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from detectors.registry import DetectorSet
from features.redact.engine import redact
from ingest.formats.table import delivered
from ingest.pipeline.engine import Pipeline
from ingest.sources.files import ReadStats, read_recordings
from models.records import Alert, DeadLetter
from models.store import Store
from trajwatch import actions
from trajwatch.actions.backtest import decide
from trajwatch.actions.endpoints import ActionsConfig
from trajwatch.actions.policy import Decision
from trajwatch.service.gc_tuning import tune_gc
from trajwatch.settings import Settings


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    sessions: list[str]
    steps: int
    """Steps stored for the replayed sessions: the same figure on every replay."""
    new_steps: int
    duplicates: int
    dead_letters: int
    alerts: list[Alert]
    files: int
    skipped: list[str]
    """Files under the given folders that are not recordings (unknown format by name)."""
    first_dead_letters: list[DeadLetter] = field(default_factory=list)
    """The first few dead letters of this replay (see ``Pipeline.stats``)."""
    would_fire: list[Decision] = field(default_factory=list)
    """The actions the policy fires for the replay's alerts (sent only with ``deliver``)."""
    queued: int = 0
    """Outbox rows this replay queued (``deliver`` only)."""
    undelivered: int = 0
    """Of those, still pending when the replay stopped waiting (``deliver`` only)."""
    delivery_statuses: dict[str, int] = field(default_factory=dict)
    """status → outbox rows of the replayed alerts, when the replay stopped waiting
    (``deliver`` only)."""
    rejudged: int = 0
    """Sessions judged again in event-time order after a late step (once per settling)."""
    rejudged_steps: int = 0
    """The steps those re-judgements placed and judged again."""

    def to_json(self) -> dict[str, Any]:
        """The stable shape of ``trajwatch replay --json``."""
        return {
            "sessions": len(self.sessions),
            "steps": self.steps,
            "dead_letters": self.dead_letters,
            "alerts": [a.to_json() for a in self.alerts],
            "skipped": [{"path": path, "reason": SKIP_REASON} for path in self.skipped],
            "dead_letter_reasons": [
                {"source": d.source, "location": redact(d.location), "reason": redact(d.reason)}
                for d in self.first_dead_letters
            ],
            "would_fire": [d.to_json() for d in self.would_fire],
        }


SKIP_REASON = "unknown format: not a recording by its name"


def replay(
    paths: list[Path],
    *,
    settings: Settings,
    detectors: DetectorSet | None = None,
    progress: Callable[[int], None] | None = None,
    actions_config: ActionsConfig | None = None,
    deliver: bool = False,
    deliver_timeout_s: float = 60.0,
) -> ReplaySummary:
    """Replay ``paths`` into the store at ``settings.db_url``; returns what was seen."""
    actions_config = actions_config or ActionsConfig()
    tune_gc()
    store = Store.open(settings.db_url)
    sink, dispatcher = None, None
    try:
        if deliver:
            sink, dispatcher = actions.start(settings.db_url, actions_config)
        # each session judged once: a commit that re-judges a session in event-time
        # order does not judge its steps in arrival order first (Pipeline's judge_once)
        pipeline = Pipeline(
            store,
            settings=settings,
            detectors=detectors,
            sinks=[sink] if sink else [],
            judge_once=True,
        )
        stats = ReadStats()
        since_commit = 0
        for partition, files in read_recordings(paths, stats):
            timed = [delivered(records, pipeline.settings) for records in files]
            for _, feed in heapq.merge(*timed, key=itemgetter(0)):
                feed(pipeline)
                since_commit += 1
            pipeline.end_partition(partition)
            if progress is not None:
                progress(1)
            if since_commit >= settings.commit_every:
                pipeline.commit()
                since_commit = 0
        pipeline.close()
        undelivered = 0
        if dispatcher is not None:
            dispatcher.drain(deliver_timeout_s)
            undelivered = store.outbox().pending()
        sessions = sorted(pipeline.stats.sessions)
        alerts = store.alerts(sessions) if sessions else []
        decisions = decide(store, actions_config.policy, alerts)
        return ReplaySummary(
            sessions=sessions,
            steps=store.step_count(sessions),
            new_steps=pipeline.stats.new_steps,
            duplicates=pipeline.stats.duplicates,
            dead_letters=pipeline.stats.dead_letters,
            alerts=alerts,
            files=stats.files,
            skipped=stats.skipped,
            first_dead_letters=list(pipeline.stats.first_dead_letters),
            would_fire=[d for d in decisions if d.fires],
            queued=0 if sink is None else sink.queued,
            undelivered=undelivered,
            delivery_statuses=store.outbox().statuses([a.alert_id for a in alerts])
            if deliver
            else {},
            rejudged=pipeline.stats.rejudged,
            rejudged_steps=pipeline.stats.rejudged_steps,
        )
    finally:
        if dispatcher is not None:
            dispatcher.stop()
        store.close()
