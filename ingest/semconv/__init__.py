"""Spans to step drafts, by the GenAI conventions, OpenInference and the dialects."""
