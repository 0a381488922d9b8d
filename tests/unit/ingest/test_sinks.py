"""The pipeline's output seam on a real store: sinks write inside the commit's transaction
and are told of what is durable, once."""

from __future__ import annotations

import heapq
from operator import itemgetter

import pytest
from sqlalchemy import text

from ingest.formats.table import delivered
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.sinks import Committed, Sink
from ingest.sources.files import read_recordings
from models.store import Store, StoreUnit
from tests.support.paths import ROOT
from trajwatch.config import detector_set, load_config
from trajwatch.settings import Settings

LOOP_RUN = ROOT / "fixtures" / "recorded" / "run-002-8e3cb0.events.jsonl.gz"


class Recording(Sink):
    """Keeps what it is told after each commit; can fail inside the transaction, where the
    actions write their outbox rows."""

    def __init__(self, *, fail_in_transaction: bool = False) -> None:
        self.told: list[Committed] = []
        self.fail = fail_in_transaction

    def in_transaction(self, unit: StoreUnit, committed: Committed) -> None:
        if self.fail and committed.alerts:
            raise RuntimeError("sink failed inside the transaction")

    def after_commit(self, committed: Committed) -> None:
        self.told.append(committed)


def _replay(store: Store, sink: Sink) -> Pipeline:
    settings = Settings()
    pipeline = Pipeline(
        store, settings=settings, detectors=detector_set(load_config(None)), sinks=[sink]
    )
    for partition, files in read_recordings([LOOP_RUN]):
        timed = [delivered(records, settings) for records in files]
        for _, feed in heapq.merge(*timed, key=itemgetter(0)):
            feed(pipeline)
        pipeline.end_partition(partition)
    pipeline.close()
    return pipeline


def test_a_sink_is_told_each_new_alert_once_after_its_commit(store: Store) -> None:
    first = Recording()
    _replay(store, first)
    told = [alert.alert_id for committed in first.told for alert in committed.alerts]
    assert told, "the loop run raises alerts"
    assert sorted(told) == sorted(a.alert_id for a in store.alerts())
    assert sum(len(c.steps) for c in first.told) == store.count("steps")

    again = Recording()
    _replay(store, again)  # the same input redelivered: nothing new to tell
    assert [a for c in again.told for a in c.alerts] == []


def test_a_sink_failing_inside_the_transaction_rolls_the_commit_back(store: Store) -> None:
    with pytest.raises(RuntimeError, match="inside the transaction"):
        _replay(store, Recording(fail_in_transaction=True))
    with store.engine.connect() as connection:
        stored = connection.execute(text("SELECT count(*) FROM alerts")).scalar_one()
    assert stored == 0
