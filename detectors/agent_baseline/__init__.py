"""The per-agent behaviour baseline (``agent_baseline``): a learned second opinion."""
