"""End-to-end replay cost of this tree beside a baseline commit, on the same spans.

Builds realistic agent traces with the real OpenTelemetry SDK and its OTLP encoder
(100 spans a trace: the ``invoke_agent`` root, then model calls, tool calls with ~200-byte
arguments and results of a few hundred bytes, HTTP client children under the tools that
fetch; batches of 100 spans as an exporter sends them), writes them as length-delimited
``*.otlp.binpb`` recordings (or takes ``--recordings``), checks the baseline commit out
beside the current tree (``git worktree add --detach`` in a temporary folder, removed
afterwards), and replays the same files with each tree: ``trajwatch replay`` (the tree's
own CLI entry, all detectors, the tree's own ``trajwatch.toml``) into a fresh SQLite
file, each run in its own process with the same interpreter (``PYTHONPATH`` the tree),
alternating A B A B (baseline, current). A run's figure is the CPU seconds of the replay
call in that process (``time.process_time``: user + system, imports excluded), steadier
than wall time on a shared machine. It prints the machine (CPU model, cores, Python), per
tree the median over ``--repeat`` runs of spans per CPU second and µs of CPU per span,
the ratio, and then each tree's replay once more attributed by stage
(:mod:`trajwatch.bench.attribution`, run from this tree's file with the other tree on
the path; 37f6ddb's layout is known), side by side with the difference (the stage
budget is set on ``trajwatch bench``'s spans: ``trajwatch bench --stages`` prints it).
Whether both trees stored the same tables (``trajwatch/bench/hashes.py``) is printed
too: across a schema
change they differ by design.

Run: ``.venv/bin/python benchmarks/bench_speedup.py [--spans 20000] [--repeat 3]
[--baseline 37f6ddb] [--recordings DIR] [--no-stages]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
from trajwatch.bench.attribution import DESCRIPTIONS
from trajwatch.bench.hashes import HASH_SEED, table_hashes
from trajwatch.bench.run import machine
from trajwatch.bench.spans import encode_batches, length_delimited

BASELINE = "37f6ddb"
"""main a week before issue 28 (its target: no slower per span than this)."""
SPANS_PER_TRACE = 100
BATCH = 100
TRACES_PER_FILE = 20
ARGUMENT_BYTES = 200

_FILES = [
    "src/app/models.py",
    "src/app/views.py",
    "src/app/utils/dates.py",
    "tests/test_views.py",
    "README.md",
    "pyproject.toml",
    "src/app/api/handlers.py",
    "docs/usage.md",
]
_HOSTS = [
    "pypi.org",
    "docs.python.org",
    "api.github.com",
    "files.pythonhosted.org",
    "stackoverflow.com",
    "registry.npmjs.org",
]
_WORDS = [
    "timezone",
    "parse",
    "offset",
    "handler",
    "request",
    "response",
    "cache",
    "retry",
    "session",
    "token",
    "user",
    "order",
    "invoice",
    "report",
    "export",
    "import",
    "schema",
    "migration",
    "fixture",
]


def _pad(arguments: dict[str, object], rng: random.Random) -> str:
    """``arguments`` as JSON, grown to about :data:`ARGUMENT_BYTES` with a description."""
    text = json.dumps(arguments)
    words: list[str] = []
    while len(text) + len(" ".join(words)) + 20 < ARGUMENT_BYTES:
        words.append(rng.choice(_WORDS))
    return json.dumps({**arguments, "description": " ".join(words)})


def _tool(i: int, rng: random.Random) -> tuple[str, str, str, str | None]:
    """(tool, arguments JSON, result, URL fetched or None) of the i-th call of a run."""
    path = rng.choice(_FILES)
    host = rng.choice(_HOSTS)
    kind = rng.randrange(5)
    if kind == 0:
        url = f"https://{host}/simple/pkg{rng.randrange(40)}/"
        args = _pad({"command": f"curl -sL {url} | head -n {rng.randrange(5, 80)}"}, rng)
        return "bash", args, f"<html><body>links for pkg {i} " + "x" * rng.randrange(80, 400), url
    if kind == 1:
        args = _pad({"command": f"pytest -q {path} -k test_{rng.choice(_WORDS)}_{i % 9}"}, rng)
        failed = rng.random() < 0.3
        tail = f"FAILED {path}::test_case - AssertionError" if failed else "12 passed in 0.4s"
        return "bash", args, "collected 12 items\n" + "." * 12 + "\n" + tail, None
    if kind == 2:
        args = _pad({"path": path}, rng)
        body = "\n".join(f"def {rng.choice(_WORDS)}_{n}(x):\n    return x" for n in range(12))
        return "read_file", args, body, None
    if kind == 3:
        args = _pad(
            {
                "path": path,
                "old": f"return {rng.choice(_WORDS)}",
                "new": f"return {rng.choice(_WORDS)}(x)",
            },
            rng,
        )
        return "edit_file", args, f"edited {path}", None
    url = f"https://{host}/3/library/{rng.choice(_WORDS)}.html"
    args = _pad({"url": url}, rng)
    return "web_fetch", args, "<title>docs</title>" + " ".join(rng.choices(_WORDS, k=60)), url


def make_traces(total_spans: int, seed: int = 12) -> list[list[ReadableSpan]]:
    """Traces of :data:`SPANS_PER_TRACE` spans each, ``total_spans`` in all."""
    rng = random.Random(seed)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    t = 1_767_000_000_000_000_000
    traces: list[list[ReadableSpan]] = []
    for session in range(total_spans // SPANS_PER_TRACE):
        exporter.clear()
        conversation = f"bench-{session}"
        goal = f"Fix the {rng.choice(_WORDS)} bug in org/app-{session % 7}: {rng.choice(_FILES)}"
        root = tracer.start_span(
            "invoke_agent coder",
            start_time=t,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "coder",
                "gen_ai.conversation.id": conversation,
                "gen_ai.input.messages": json.dumps([{"role": "user", "content": goal}]),
            },
        )
        made = 1
        i = 0
        with trace.use_span(root, end_on_exit=False):
            while made < SPANS_PER_TRACE:
                t += 1_000_000_000
                name, arguments, result, url = _tool(i, rng)
                chat = tracer.start_span(
                    "chat m",
                    kind=SpanKind.CLIENT,
                    start_time=t,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "m",
                        "gen_ai.usage.input_tokens": 1000 + 400 * i,
                        "gen_ai.usage.output_tokens": rng.randrange(40, 400),
                        "gen_ai.response.id": f"{conversation}-r{i}",
                        "gen_ai.response.finish_reasons": ["tool_calls"],
                        "gen_ai.conversation.id": conversation,
                    },
                )
                chat.end(end_time=t + 500_000_000)
                made += 1
                if made == SPANS_PER_TRACE:
                    break
                tool = tracer.start_span(
                    f"execute_tool {name}",
                    start_time=t + 600_000_000,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": f"{conversation}-c{i}",
                        "gen_ai.tool.call.arguments": arguments,
                        "gen_ai.tool.call.result": result,
                        "gen_ai.conversation.id": conversation,
                    },
                )
                made += 1
                if url is not None and made < SPANS_PER_TRACE:
                    with trace.use_span(tool, end_on_exit=False):
                        http = tracer.start_span(
                            "GET",
                            kind=SpanKind.CLIENT,
                            start_time=t + 650_000_000,
                            attributes={
                                "http.request.method": "GET",
                                "url.full": url,
                                "server.address": url.split("/")[2],
                                "http.response.status_code": 200,
                            },
                        )
                        http.end(end_time=t + 700_000_000)
                    made += 1
                tool.end(end_time=t + 900_000_000)
                i += 1
        root.end(end_time=t + 1_000_000_000)
        traces.append(list(exporter.get_finished_spans()))
    return traces


def write_recordings(traces: list[list[ReadableSpan]], folder: Path) -> int:
    """The traces as length-delimited OTLP protobuf files; returns the spans written."""
    spans = 0
    for f in range(0, len(traces), TRACES_PER_FILE):
        chunk = [s for tr in traces[f : f + TRACES_PER_FILE] for s in tr]
        recording = length_delimited(encode_batches(chunk, BATCH))
        (folder / f"bench-{f // TRACES_PER_FILE:03d}.otlp.binpb").write_bytes(recording)
        spans += len(chunk)
    return spans


_CHILD = """
import json, sys, time
if sys.argv[3] == "trajwatch":
    from trajwatch.cli.main import main as cli
    import trajwatch.service.replay, ingest.pipeline.engine, detectors.registry
else:  # 37f6ddb's layout: the CLI was ingest.cli
    from ingest.cli import main as cli
    import ingest.replay, ingest.pipeline, detectors.registry
cpu, wall = time.process_time(), time.perf_counter()
rc = cli(["replay", "--json", "--db", sys.argv[1], sys.argv[2]])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
sys.stderr.write(json.dumps({"rc": rc, "cpu": cpu, "wall": wall}) + "\\n")
"""
ATTRIBUTION = Path(__file__).resolve().parents[1] / "trajwatch" / "bench" / "attribution.py"


def _env(tree: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": HASH_SEED}
    env.pop("TRAJWATCH_DB_URL", None)
    return env


def _layout(tree: Path) -> str:
    """``trajwatch`` (the CLI in trajwatch/cli) or ``ingest`` (37f6ddb's ingest/cli.py)."""
    return "trajwatch" if (tree / "trajwatch" / "cli" / "main.py").exists() else "ingest"


def run_tree(tree: Path, recordings: Path, db: Path) -> dict[str, float]:
    """One replay of ``recordings`` by ``tree``'s code into ``db``: its CPU and wall s."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, f"sqlite:///{db}", str(recordings), _layout(tree)],
        cwd=tree,
        env=_env(tree),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stderr.strip().splitlines()[-1])
    if result["rc"] != 0:
        raise SystemExit(f"replay by {tree} failed: exit {result['rc']}")
    return result


def stages_of(tree: Path, recordings: Path) -> dict[str, object] | None:
    """``tree``'s replay of ``recordings`` attributed by stage (µs of CPU a step), or None
    when this file's attribution cannot drive that tree (its error is printed)."""
    config = ["--config", "trajwatch.toml"] if (tree / "trajwatch.toml").exists() else []
    done = subprocess.run(
        [sys.executable, str(ATTRIBUTION), "--json", *config, str(recordings)],
        cwd=tree,
        env=_env(tree),
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print(f"  (no stage table for {tree}: {done.stderr.strip().splitlines()[-1:]})")
        return None
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def side_by_side(stages: dict[str, dict[str, Any] | None], base_label: str) -> list[str]:
    """Both trees' stage tables as one: µs of CPU a step by stage (sampled), the
    baseline's, this tree's and the difference, this tree's largest first; a stage one
    tree has not is ``-`` there. The stage budget (``benchmarks/stage_budget.toml``) is
    set on ``trajwatch bench``'s spans, not these: ``trajwatch bench --stages`` shows it."""
    base = (stages.get("baseline") or {}).get("us_per_step", {})
    current = (stages.get("current") or {}).get("us_per_step", {})
    names = sorted(set(base) | set(current), key=lambda n: (-current.get(n, 0.0), n))

    def cell(value: float | None) -> str:
        return f"{value:9.1f}" if value is not None else f"{'-':>9}"

    lines = [
        "stages, µs of CPU a step (sampled):",
        f"{base_label:>9} {'this tree':>9} {'diff':>9}  stage",
    ]
    for name in names:
        b, c = base.get(name), current.get(name)
        diff = (c or 0.0) - (b or 0.0)
        what = DESCRIPTIONS.get(name, "")
        lines.append(f"{cell(b)} {cell(c)} {diff:+9.1f}  {name:<24} {what}".rstrip())
    totals = [(stages.get(k) or {}).get("total") for k in ("baseline", "current")]
    if None not in totals:
        diff = totals[1] - totals[0]
        lines.append(f"{cell(totals[0])} {cell(totals[1])} {diff:+9.1f}  all of it")
    return lines


def _short_head(tree: Path) -> str:
    """The abbreviated commit checked out at ``tree``, or its path if git cannot tell."""
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or str(tree)


def _spans_in(recordings: Path) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    count = 0
    for path in sorted(recordings.rglob("*.otlp.binpb")):
        data, at = path.read_bytes(), 0
        while at < len(data):
            size, shift = 0, 0
            while True:
                byte = data[at]
                at += 1
                size |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            body = ExportTraceServiceRequest.FromString(data[at : at + size])
            count += sum(len(ss.spans) for rs in body.resource_spans for ss in rs.scope_spans)
            at += size
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="commit to compare with")
    parser.add_argument("--baseline-tree", type=Path, help="an existing checkout to use instead")
    parser.add_argument(
        "--recordings", type=Path, help="replay this folder of *.otlp.binpb instead of building"
    )
    parser.add_argument("--no-stages", action="store_true", help="leave the stage tables out")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="bench-speedup-") as tmp_name:
        tmp = Path(tmp_name)
        if args.recordings is not None:
            recordings = args.recordings.resolve()
            spans = _spans_in(recordings)
        else:
            recordings = tmp / "recordings"
            recordings.mkdir()
            spans = write_recordings(make_traces(args.spans), recordings)
        base = args.baseline_tree
        if base is None:
            base = tmp / "baseline"
            add = ["git", "-C", str(here), "worktree", "add", "--detach", "--quiet"]
            subprocess.run([*add, str(base), args.baseline], check=True)
        try:
            runs: dict[str, list[dict[str, float]]] = {"baseline": [], "current": []}
            trees = {"baseline": base.resolve(), "current": here}
            hashes = {}
            for r in range(args.repeat):  # A B A B: a change in the machine's load hits both
                for name, tree in trees.items():
                    db = tmp / f"{name}-{r}.db"
                    runs[name].append(run_tree(tree, recordings, db))
                    if r == 0:
                        hashes[name] = table_hashes(db)
                    db.unlink()
            stages = {}
            if not args.no_stages:
                stages = {name: stages_of(tree, recordings) for name, tree in trees.items()}
        finally:
            if args.baseline_tree is None:
                subprocess.run(
                    ["git", "-C", str(here), "worktree", "remove", "--force", str(base)],
                    check=False,
                )
    m = machine()
    print(
        f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, {m['platform']}; "
        f"load average {m['load_1m']} at the end"
    )
    steps = hashes["current"]["steps"]["rows"]
    print(
        f"input: {spans} spans -> {steps} steps ({hashes['baseline']['steps']['rows']} by the "
        f"baseline); trajwatch replay into SQLite, all detectors, each tree's trajwatch.toml; "
        f"CPU seconds of the replay call, runs alternated A B A B, median of {args.repeat}"
    )
    rates = {}
    # the baseline's own commit when a checkout was given (not the --baseline default)
    base_label = _short_head(base) if args.baseline_tree is not None else args.baseline
    for name, label in (("baseline", base_label), ("current", "this tree")):
        cpus = [r["cpu"] for r in runs[name]]
        cpu = statistics.median(cpus)
        wall = statistics.median(r["wall"] for r in runs[name])
        rates[name] = spans / cpu
        print(
            f"  {name:<9} {label:<10} {spans / cpu:>8,.0f} spans/s of CPU  "
            f"{cpu / spans * 1e6:7.1f} µs CPU/span  ({cpu:.2f} s CPU, {wall:.2f} s wall; "
            f"runs: {', '.join(f'{c:.2f}' for c in cpus)} s CPU)"
        )
    print(
        "  ratio current/baseline (spans per CPU second): "
        f"{rates['current'] / rates['baseline']:.2f}x"
    )
    same = hashes["baseline"] == hashes["current"]
    differing = sorted(
        t for t in hashes["current"] if hashes["current"][t] != hashes["baseline"].get(t)
    )
    print(
        "  tables: identical"
        if same
        else f"  tables differ from the baseline's: {', '.join(differing)}"
    )
    if stages.get("baseline") or stages.get("current"):
        print("\n".join(["", *side_by_side(stages, base_label)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
