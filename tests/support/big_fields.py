"""Big-field shapes and one timed pipeline run, shared by
tests/unit/ingest/test_big_fields.py and benchmarks/bench_big_fields.py.

A shape is what one agent's tool argument or output can be: a hex dump (``xxd -p``), a
base64 blob, one long word, minified JSON, deeply nested JSON, thousands of URLs, many
quotes and backslashes, a quoted blob on a command line (``curl -d '...'``: shell
parsing), long whitespace runs, prose. Each field ends with (or, for JSON, holds as its
last value) a made-up secret: redaction must see all of the field. The session's
instructions state rules, so the policy derived from them checks every field too.
"""

from __future__ import annotations

import base64
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

from detectors.registry import DetectorSet, load_builtin
from ingest.pipeline.engine import Pipeline
from models.store import Store
from trajwatch.settings import Settings

SECRET = "ghp_" + "Zq7" * 12
"""Made up; at the very end of every field."""
T0 = 1_767_000_000.0
INSTRUCTIONS = (
    "Run the tests before committing. Make sure the build passes before deploying. "
    "Never force-push. Never push to main. Ask for approval before any git push."
)


def _blob(n: int) -> bytes:
    rnd = random.Random(n)
    return rnd.randbytes(n)


def _json_list(n: int) -> str:
    items: list[object] = []
    size = 0
    i = 0
    while size < n:
        item = {"k": i, "v": f"x{i}", "u": f"https://h{i % 97}.example.com/p"}
        items.append(item)
        size += len(json.dumps(item, separators=(",", ":"))) + 1
        i += 1
    items.append({"token_note": SECRET})
    return json.dumps(items, separators=(",", ":"))


SHAPES: dict[str, Callable[[int], str]] = {
    "hex": lambda n: _blob(n // 2).hex() + " " + SECRET,
    "base64": lambda n: base64.b64encode(_blob(n * 3 // 4)).decode() + " " + SECRET,
    "one_word": lambda n: "a" * n + " " + SECRET,
    "urls": lambda n: (
        " ".join(f"https://h{i}.example.com/p/{i}?q={i}" for i in range(n // 36)) + " " + SECRET
    ),
    "minified_json": _json_list,
    "deep_json": lambda n: "[" * (n // 2) + json.dumps(SECRET) + "]" * (n // 2),
    "quotes_backslashes": lambda n: '\\"' * (n // 2) + " " + SECRET,
    "whitespace": lambda n: " \t\n" * (n // 3) + SECRET,
    "prose": lambda n: "the build failed because the cache was stale; " * (n // 46 + 1) + SECRET,
    # shell parsing (bounded to features.text.shell_words.MAX_SHELL_CHARS) and redaction's
    # passes over every field it fills: 0.77 s for 1 MiB before the trigger scan was
    # one Aho-Corasick pass and chose the rules to run
    "shell_quoted": lambda n: (
        "curl -d '" + "x" * n + "' https://api.example.com/v1/upload -H 'x-key: " + SECRET + "'"
    ),
}


def _events(field: str) -> list[str]:
    def ev(seq: int, kind: str, **fields: object) -> str:
        return json.dumps({"type": kind, "session_id": "s", "seq": seq, "ts": T0 + seq, **fields})

    return [
        ev(
            0,
            "session_start",
            goal="Flash the firmware image and check it boots",
            # rules every tool call is then checked against (features.policy.instructions): their
            # patterns search each field too (one cost 3 s on a 64 KB word)
            system_instructions=INSTRUCTIONS,
        ),
        ev(1, "model_call", model="m", tokens_in=10, tokens_out=1, output_text=field),
        ev(2, "tool_call", tool="bash", call_id="c1", arguments=field),
        ev(3, "tool_call", tool="bash", call_id="c2", arguments={"command": "echo " + field}),
        ev(4, "tool_result", call_id="c1", ok=True, output=field),
        ev(5, "tool_result", call_id="c2", ok=False, error=field),
        ev(6, "session_end", status="success"),
    ]


def run_once(field: str, db_dir: Path) -> tuple[float, float, Store]:
    """CPU and wall seconds for the whole pipeline on ``field``: decode, steps, every
    detector, commit into a fresh SQLite store (opened before the clock starts), and the
    open store. CPU time is this process's own: on a shared machine the wall clock also
    counts the other processes' turns."""
    load_builtin()
    db_dir.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{db_dir / 'big.db'}"
    store = Store.open(url)
    pipeline = Pipeline(store, settings=Settings(db_url=url), detectors=DetectorSet.from_config())
    lines = _events(field)
    cpu, wall = time.process_time(), time.perf_counter()
    for i, line in enumerate(lines):
        pipeline.feed_event(line, source="big", location=f"l{i}", partition="p")
    pipeline.close()
    return time.process_time() - cpu, time.perf_counter() - wall, store
