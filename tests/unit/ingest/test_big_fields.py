"""A 1 MiB field of any shape goes through the whole pipeline in linear time.

Per shape, the pipeline (decode → steps → every detector → store commit) runs on a
32 KiB and on a 1 MiB field; 1 MiB must cost at most ~40× what 32 KiB costs (32× the
input: linear, with the analyses bounded by ``features.text.clip.MAX_ANALYSED_CHARS``) and
under a second of CPU time. A quadratic regex, such as the one that made a 40 KB hex string cost
11 s, fails the ratio long before the wall clock. Absolute figures per shape:
``benchmarks/bench_big_fields.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from features.text.clip import MAX_ANALYSED_CHARS
from tests.support.big_fields import SECRET, SHAPES, run_once

SMALL = 32 * 1024
BIG = 1024 * 1024


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_big_field_costs_linear_time_and_is_redacted_whole(shape: str, tmp_path: Path) -> None:
    make = SHAPES[shape]
    small_field, big_field = make(SMALL), make(BIG)
    assert len(big_field) >= BIG > MAX_ANALYSED_CHARS
    # CPU seconds, best of two: the machine is shared, another process's turn is not
    # the code's cost
    small = min(run_once(small_field, tmp_path / f"s{i}")[0] for i in range(2))
    big_runs = [run_once(big_field, tmp_path / f"b{i}") for i in range(2)]
    big = min(cpu for cpu, _, _ in big_runs)
    assert big < 1.0, f"{shape}: {big:.2f} s for 1 MiB"
    assert big <= 40 * max(small, 0.005), f"{shape}: 1 MiB {big:.3f} s vs 32 KiB {small:.3f} s"
    big_runs[1][2].close()

    store = big_runs[0][2]
    try:
        steps = store.steps("s")
    finally:
        store.close()
    call = next(s for s in steps if s.call_id == "c1" and s.kind == "tool_call")
    assert call.arguments is not None and len(call.arguments) >= BIG // 2  # stored whole
    for step in steps:
        for value in (step.arguments, step.action, step.text, step.result, step.error):
            assert SECRET not in (value or ""), (shape, step.kind)


def test_a_quoted_blob_on_a_command_line_is_split_in_bounded_time() -> None:
    """The fuzzer's costliest class: ``shlex`` reads a character at a time (~5-10 µs), so a
    quoted 200 KB blob on a ``curl`` line cost 1.6 s in egress extraction; shell parsing
    reads the first ``MAX_SHELL_CHARS`` only, whatever the length."""
    import time

    from features.egress.targets import egress_targets
    from features.text.shell_words import tokenize

    for n in (16_384, 1024 * 1024):
        command = "curl -d '" + "x" * n + "' https://api.example.com/v1/upload"
        started = time.process_time()
        tokenize(command)
        targets = egress_targets("bash", {"command": command})
        argv = egress_targets("bash", {"command": ["curl", "-d", "x" * n, "https://a.example"]})
        took = time.process_time() - started
        assert took < 0.5, f"{n} characters: {took:.2f} s"
    # the head is still parsed: a short command's target is found
    assert [t.host for t in egress_targets("bash", {"command": "curl -d 'x' https://a.example"})]
    assert targets is not None and argv is not None
