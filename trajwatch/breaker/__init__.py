"""The reference circuit breaker that trajwatch's webhooks open, and its LangGraph hook."""
