"""How many tokens a model's context window holds: a table, and the lookup.

The input context (prompt) window of the common OpenAI, Anthropic and Google models, in
tokens, as their providers' model pages state them (read 2026-12-06): Anthropic's Claude
4 and 4.5 models 200,000 (Sonnet's 1M window is a beta a request opts into: not assumed);
OpenAI's GPT-5 family 400,000 in total of which 272,000 input (what Codex reports as
``model_context_window``), GPT-4.1 1,047,576, GPT-4o 128,000, o-series 200,000; Google's
Gemini 2.x and 3 1,048,576 (Gemini 1.5 Pro 2,097,152). A family row (``claude``, ``gpt-5``,
``gemini``) covers models newer than the table. Model names match as prices do
(:func:`features.prices.table.holds_model`: ``gpt-4o-2024-08-06`` is ``gpt-4o``, a provider
prefix is skipped); a window the runtime reported on the call (``detail.context_window``)
wins over the table. A name nothing matches has no window: nothing is inferred from it.

Pure: no I/O.
"""

from __future__ import annotations

from functools import lru_cache

from features.prices.table import holds_model

__all__ = ["CONTEXT_WINDOWS", "context_window"]

CONTEXT_WINDOWS: dict[str, int] = {
    # anthropic
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude": 200_000,
    # openai
    "gpt-5": 272_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "o4-mini": 200_000,
    "o3": 200_000,
    "o1": 200_000,
    "codex-mini": 200_000,
    # google
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-3": 1_048_576,
    "gemini": 1_048_576,
}
"""Model (or family) → input context window, tokens (sources in the module docstring)."""

_BY_LENGTH = sorted(CONTEXT_WINDOWS, key=len, reverse=True)
_FAMILY_PREFIXES = ("claude", "gpt-5", "gemini")


@lru_cache(maxsize=512)
def context_window(model: str | None) -> int | None:
    """The input context window of ``model`` in tokens, or None when unknown.

    >>> [context_window(m) for m in ("claude-sonnet-4-5-20250929", "gpt-5-codex",
    ...                              "models/gemini-2.5-pro", "gpt-4o-2024-08-06", "llama-3")]
    [200000, 272000, 1048576, 128000, None]
    >>> context_window("gpt-5.1-codex-max"), context_window("claude-opus-5")
    (272000, 200000)
    """
    if not model:
        return None
    name = model.strip().lower()
    for key in _BY_LENGTH:
        if holds_model(name, key):
            return CONTEXT_WINDOWS[key]
    # a family row also covers its newer members (gpt-5.1, claude-opus-5): a prefix of
    # the name after any provider path
    tail = name.rsplit("/", 1)[-1]
    for family in _FAMILY_PREFIXES:
        if tail.startswith(family):
            return CONTEXT_WINDOWS[family]
    return None
