"""Pure helpers that turn raw span/event facts into normalised step features:
redaction, canonical actions, egress extraction, compaction inference, ordering.
No I/O, no wall clock."""
