"""Every input into steps: records come from :mod:`ingest.sources` (files, OTLP/HTTP, the
inbound log, Kafka), :mod:`ingest.formats` recognises and decodes them (one table), the
spans' conventions are read by :mod:`ingest.semconv`, and :mod:`ingest.pipeline` orders,
sequences, runs the detectors and commits. :mod:`ingest.decoded` holds the shapes they all
speak. It imports ``models``, ``features`` and ``detectors``, never ``trajwatch``."""
