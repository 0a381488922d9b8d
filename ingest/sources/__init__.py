"""Where records come from: files, OTLP/HTTP, the inbound log, Kafka, the repartition topic."""
