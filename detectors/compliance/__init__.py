"""Compliance: decay after a context compaction, and violations with none in play."""
