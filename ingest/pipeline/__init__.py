"""The one pipeline every record goes through: order, sequence, detect, store.

- :mod:`~ingest.pipeline.engine`: :class:`~ingest.pipeline.engine.Pipeline` (feed, commit,
  close), the one class the sources and the composition root drive;
- :mod:`~ingest.pipeline.intake`, :mod:`~ingest.pipeline.ordering`,
  :mod:`~ingest.pipeline.resolution`: the gate, event-time order per partition, and the
  session of each released draft;
- :mod:`~ingest.pipeline.lookups`: everything a release reads from the store, in one
  place before it sequences;
- :mod:`~ingest.pipeline.turns`, :mod:`~ingest.pipeline.identity`,
  :mod:`~ingest.pipeline.sequencing`: a draft's step id, parent and place in its session;
- :mod:`~ingest.pipeline.session`, :mod:`~ingest.pipeline.session_state`: a live session,
  the bytes the store keeps of it, and the way back;
- :mod:`~ingest.pipeline.probe`: the pre-execution check's run through copies of the
  detectors;
- :mod:`~ingest.pipeline.sinks`, :mod:`~ingest.pipeline.letters`,
  :mod:`~ingest.pipeline.stats`, :mod:`~ingest.pipeline.options`,
  :mod:`~ingest.pipeline.trace_index`: the output seam, the pipeline's own dead letters,
  its counters, its settings, and the bounded memory of recent traces.
"""
