"""Model names as providers and runtimes spell them: one table key held by many names.

A table keyed by model family (list prices, context windows) matches a name that holds
the key after a provider prefix (``openai/gpt-4o``, ``models/gemini-2.5-pro``) and before a
date or version suffix (``gpt-4o-2024-08-06`` is ``gpt-4o``; ``gpt-4o-mini`` is not
``gpt-4o``: ``-mini`` starts a suffix, but the longest key is tried first by the callers).
"""

from __future__ import annotations

_PREFIX_ENDS = "/."
_SUFFIX_STARTS = "-_:@"


def holds_model(name: str, key: str) -> bool:
    """Whether model name ``name`` (lower case) holds table key ``key`` at a prefix
    boundary, followed by a suffix boundary (the matching the module describes).

    >>> holds_model("openai/gpt-4o-2024-08-06", "gpt-4o"), holds_model("gpt-4.1", "gpt-4")
    (True, False)
    """
    start = name.find(key)
    while start >= 0:
        end = start + len(key)
        if (start == 0 or name[start - 1] in _PREFIX_ENDS) and (
            end == len(name) or name[end] in _SUFFIX_STARTS
        ):
            return True
        start = name.find(key, start + 1)
    return False
