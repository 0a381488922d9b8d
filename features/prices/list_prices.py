"""List prices of model calls, US dollars per million tokens (input, output): the first tier
(a request under the long-context threshold) at the standard service tier, for the common
OpenAI, Anthropic and Google models. trajwatch prices a model call with these when the call
did not report its own cost (:mod:`features.prices.table`); the config's ``[prices]`` table
adds models or overrides these (docs/configuration.md).

Source: the bundled data of genai-prices 0.2.3 (PyPI; github.com/pydantic/genai-prices, MIT),
read on 2026-12-06 with its ``calc_price`` at that date, for 1,000 tokens (times 1,000) so
the first tier applies. To refresh: ``pip install genai-prices``, then for each row
``calc_price(Usage(input_tokens=1000), model_ref=..., provider_id=...).total_price * 1000``
(and ``output_tokens=1000``). The comment after each row names the provider and its model id
there. genai-prices itself is not a dependency: it would bring pydantic and an HTTP client
into the service, ~0.8 s of import and 0.2-1 ms a lookup on the per-step path, for tiers and
dated rates a per-million table covers for the common case.
"""

LIST_PRICES: dict[str, tuple[float, float]] = {
    # openai
    "gpt-6.1-sol": (2.0, 10.0),  # openai gpt-6.1-sol
    "gpt-6.1-terra": (1.0, 5.0),  # openai gpt-6.1-terra
    "gpt-6-sol": (2.0, 10.0),  # openai gpt-6-sol
    "gpt-6-luna": (0.1, 0.5),  # openai gpt-6-luna
    "gpt-6-astra": (10.0, 50.0),  # openai gpt-6-astra
    "gpt-6-rosalind": (15.0, 75.0),  # openai gpt-6-rosalind
    "gpt-5.6-sol": (4.0, 20.0),  # openai gpt-5.6-sol
    "gpt-5.6-terra": (2.0, 12.0),  # openai gpt-5.6-terra
    "gpt-5.6-luna": (0.2, 1.2),  # openai gpt-5.6-luna
    "gpt-5.5": (5.0, 30.0),  # openai gpt-5.5
    "gpt-5.4": (2.5, 15.0),  # openai gpt-5.4
    "gpt-5.3-codex": (1.75, 14.0),  # openai gpt-5.3-codex
    "gpt-5.3": (1.75, 14.0),  # openai gpt-5.3
    "gpt-5.2": (1.75, 14.0),  # openai gpt-5.2
    "gpt-5.1-codex-mini": (0.25, 2.0),  # openai gpt-5.1-codex-mini
    "gpt-5.1": (1.25, 10.0),  # openai gpt-5.1
    "gpt-5-mini": (0.25, 2.0),  # openai gpt-5-mini
    "gpt-5-nano": (0.05, 0.4),  # openai gpt-5-nano
    "gpt-5": (1.25, 10.0),  # openai gpt-5
    "gpt-4.1-mini": (0.4, 1.6),  # openai gpt-4.1-mini
    "gpt-4.1-nano": (0.1, 0.4),  # openai gpt-4.1-nano
    "gpt-4.1": (2.0, 8.0),  # openai gpt-4.1
    "gpt-4o-mini": (0.15, 0.6),  # openai gpt-4o-mini
    "gpt-4o": (2.5, 10.0),  # openai gpt-4o
    "o4-mini": (1.1, 4.4),  # openai o4-mini
    "o3-pro": (20.0, 80.0),  # openai o3-pro
    "o3-mini": (1.1, 4.4),  # openai o3-mini
    "o3": (2.0, 8.0),  # openai o3
    "o1": (15.0, 60.0),  # openai o1
    "codex-mini": (1.5, 6.0),  # openai codex-mini
    # anthropic
    "claude-opus-5-5": (4.0, 20.0),  # anthropic claude-opus-5-5
    "claude-sonnet-5-5": (2.0, 10.0),  # anthropic claude-sonnet-5-5
    "claude-haiku-5-5": (0.1, 0.5),  # anthropic claude-haiku-5-5
    "claude-fable-5-2": (8.0, 40.0),  # anthropic claude-fable-5-2
    "claude-mythos-5-2": (8.0, 40.0),  # anthropic claude-mythos-5-2
    "claude-opus-5": (5.0, 25.0),  # anthropic claude-opus-5
    "claude-sonnet-5": (2.0, 10.0),  # anthropic claude-sonnet-5
    "claude-opus-4-8": (5.0, 25.0),  # anthropic claude-opus-4-8
    "claude-opus-4-7": (5.0, 25.0),  # anthropic claude-opus-4-7
    "claude-opus-4-6": (5.0, 25.0),  # anthropic claude-opus-4-6
    "claude-opus-4-5": (5.0, 25.0),  # anthropic claude-opus-4-5
    "claude-opus-4-1": (15.0, 75.0),  # anthropic claude-opus-4-1
    "claude-opus-4": (15.0, 75.0),  # anthropic claude-opus-4-0
    "claude-sonnet-4-6": (3.0, 15.0),  # anthropic claude-sonnet-4-6
    "claude-sonnet-4-5": (3.0, 15.0),  # anthropic claude-sonnet-4-5
    "claude-sonnet-4": (3.0, 15.0),  # anthropic claude-sonnet-4-0
    "claude-haiku-4-5": (1.0, 5.0),  # anthropic claude-haiku-4-5
    "claude-3-7-sonnet": (3.0, 15.0),  # anthropic claude-3-7-sonnet-latest
    "claude-3-5-sonnet": (3.0, 15.0),  # anthropic claude-3-5-sonnet
    "claude-3-5-haiku": (0.8, 4.0),  # anthropic claude-3-5-haiku-latest
    # google
    "gemini-4-argon": (4.0, 20.0),  # google gemini-4-argon
    "gemini-3.8-flash": (0.75, 3.75),  # google gemini-3.8-flash
    "gemini-3.7-flash": (0.75, 3.75),  # google gemini-3.7-flash
    "gemini-3.6-flash": (0.75, 3.75),  # google gemini-3.6-flash
    "gemini-3.1-pro": (2.0, 12.0),  # google gemini-3.1-pro-preview
    "gemini-3-pro": (2.0, 12.0),  # google gemini-3-pro-preview
    "gemini-3-flash": (0.5, 3.0),  # google gemini-3-flash-preview
    "gemini-2.5-pro": (1.25, 10.0),  # google gemini-2.5-pro
    "gemini-2.5-flash-lite": (0.1, 0.4),  # google gemini-2.5-flash-lite
    "gemini-2.5-flash": (0.3, 2.5),  # google gemini-2.5-flash
    "gemini-2.0-flash-lite": (0.075, 0.3),  # google gemini-2.0-flash-lite
    "gemini-2.0-flash": (0.1, 0.4),  # google gemini-2.0-flash
}
"""Model → (input, output): US dollars per million tokens."""
