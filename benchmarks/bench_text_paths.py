"""Microbenchmarks of two per-call text paths: redaction (:func:`features.redact.engine.redact`)
and the canonical action (:func:`features.calls.canonical.canonical_action`), µs a call
on typical tool arguments.

Run: ``PYTHONPATH=. python benchmarks/bench_text_paths.py``
"""

from __future__ import annotations

import functools
import platform
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
from features.calls.canonical import canonical_action, canonical_json
from features.redact.engine import redact


def bench_redact() -> None:
    shell = (
        '{"command": "cd /work/repo && git log --oneline -n 20 && pytest -q tests/test_api.py '
        '-k \\"not slow\\" --maxfail=1 2>&1 | tail -n 50", "timeout": 120, "cwd": "/work/repo", '
        '"description": "Run the API tests after fixing the retry loop in client.py"}'
    )
    samples = {
        "2KB shell/JSON": (shell * 8)[:2048],
        "2KB python w/ trigger words": (
            "def call(api_key: str, max_tokens: int = 4096) -> dict:\n"
            "    token = os.environ['API_TOKEN']\n"
            "    headers = {'Authorization': f'Bearer {token}'}\n"
            "    # reset your password if the secret rotated\n"
            "    return client.post(url, json={'key': key, 'tokens_in': 1200}, headers=headers)\n"
        )
        * 8,
        "200B": shell[:200],
    }
    for label, text in samples.items():
        text = text[:2048]
        n = 20000
        t = timeit.timeit(functools.partial(redact, text), number=n) / n
        print(f"{label:30s} {len(text):5d} chars  {t * 1e6:6.1f} µs")


def bench_canonical() -> None:
    small = {"command": "sed -n 10,20p /tmp/tmpab12cd34/app.py", "timeout": 30}
    edit = {
        "command": "str_replace",
        "path": "/work/repo/src/app/client.py",
        "old_str": "    for attempt in range(3):\n        resp = session.get(url, timeout=10)\n"
        * 14,
        "new_str": "    for attempt in range(5):\n        resp = session.get(url, timeout=30)\n"
        * 14,
    }
    for label, args in (("small dict", small), ("2KB str_replace edit", edit)):
        n = 20000
        t = timeit.timeit(functools.partial(canonical_action, "bash", args), number=n) / n
        print(f"{label:25s} {len(canonical_json(args)):5d} chars  {t * 1e6:6.1f} µs")


if __name__ == "__main__":
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    bench_redact()
    bench_canonical()
