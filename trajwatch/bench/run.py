"""``trajwatch bench``: what the service costs, measured on realistic agent spans.

A benchmark, not a test: it prints figures (and with ``--json`` the same as one JSON
object) and judges them against the live-service issue's targets; it asserts nothing.
The spans are :mod:`trajwatch.bench.spans`' (the real OpenTelemetry SDK and OTLP
encoder, 100 spans a trace, ~200-byte tool arguments, every fourth run falling into a
retry loop), cut into export requests of :data:`trajwatch.bench.spans.BATCH` spans.
Every phase runs with the same detector set (the config's), on SQLite:

1. **replay**: the traces written as ``*.otlp.binpb`` recordings and replayed in this
   process (``trajwatch.service.replay.replay``); spans/s and CPU seconds.
2. **serve**: ``trajwatch serve``'s :class:`~trajwatch.service.serve.Service` — uvicorn on
   loopback — in a child process, fed the same requests as OTLP/HTTP POSTs by
   :data:`SENDERS` keep-alive clients here (503 → wait ``Retry-After``, send again, as
   the SDK does), timed from the first POST until every step is committed and the
   write-ahead log is empty (which includes the last ``idle_flush_ms``); the stored
   alert ids must equal the replay's. Phases 1 and 2 alternate ``repeat`` times (a
   shared machine's load changes by the minute); medians are reported, and the CPU
   seconds of both beside (steadier than wall time when other work runs).
3. **latency**: in the last serve child, fresh runs (every other one looping) sent at
   half the median rate phase 2 reached, paced; the span-to-alert latency of each alert
   is ``trajwatch_span_to_alert_seconds``' (from receiving the request that released
   the step to its alert being committed — so the lateness wait, ``lateness_ms`` of
   event time, and the ``idle_flush_ms`` of a run's end, reported beside, are not in
   it), recorded exactly rather than bucketed.
4. **memory**: a fresh process holds ``sessions`` concurrently active sessions (every
   run's opening rounds fed, as ``serve`` feeds them, none ended): peak RSS, RSS per
   session, and each detector's pickled state per session; also the detectors' state
   at the end of phase 1's 100-span runs.
5. **stages**: CPU µs per stored step of decode, normalise (span → step, redaction),
   the feature pass, each detector, and the store's writes, each timed on its own over
   the phase-1 data (so the normal path carries no timer), beside replay's whole CPU µs
   per step; and the raw ``ExportTraceServiceRequest.FromString`` rate, with each rate
   as a ratio to it. Then the phase-1 replay once more with each named stage marked and
   its CPU sampled (:mod:`trajwatch.bench.attribution`): what "the rest" is, by name
   (sequencing, the storable check, checkpoints, ordering, the files' reading, …).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pickle
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.errors import ConfigError
from trajwatch.bench.spans import BATCH
from trajwatch.service.spawned import free_port, wait_healthy

__all__ = ["Sizes", "format_report", "run_bench"]

SENDERS = 4
"""Concurrent exporters (agent processes) posting to ``serve``."""
IDLE_FLUSH_MS = 300
"""``serve``'s idle flush in the benchmark (30 s by default): how long after a run's last
request its last held steps wait; part of the serve phase's committed time."""
TARGETS = {
    "serve_over_replay": 0.8,
    "p99_ms": 250.0,
    "rss_bytes_at_10k": 1 << 30,
    "state_bytes": 64 << 10,
}


@dataclass(frozen=True, slots=True)
class Sizes:
    """How much each phase runs; :meth:`quick` is seconds, :meth:`full` minutes."""

    traces: int
    latency_traces: int
    sessions: int
    session_rounds: int
    repeat: int
    """Replay and serve are measured this many times, alternately; medians reported."""
    attribute: bool = True
    """Whether phase 1's replay runs once more, attributed by stage (a fresh process:
    seconds of imports, most of a quick run's time; ``--quick`` leaves it out)."""

    @classmethod
    def full(cls) -> Sizes:
        return cls(traces=200, latency_traces=60, sessions=10_000, session_rounds=4, repeat=3)

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            traces=4, latency_traces=2, sessions=50, session_rounds=4, repeat=1, attribute=False
        )


# -- the machine ---------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """CPU model, cores, Python and the load when the run started."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_1m": round(load, 2) if load is not None else None,
    }


# -- the whole run -------------------------------------------------------------------------


def run_bench(
    sizes: Sizes, *, config_path: Path | None, progress: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Every phase; the report as plain data (what ``--json`` prints)."""
    try:
        from trajwatch.bench.spans import agent_traces, encode_batches
    except ImportError as exc:  # the SDK is the test/fixtures extra, not a runtime dependency
        raise ConfigError(
            f"trajwatch bench builds its spans with the OpenTelemetry SDK ({exc.name} is "
            "missing); install the test extra: pip install -e '.[test]'"
        ) from None
    from trajwatch.config import detector_set, load_config
    from trajwatch.settings import Settings

    report: dict[str, Any] = {"machine": machine(), "sizes": _asdict(sizes), "batch": BATCH}
    detectors = detector_set(load_config(config_path))
    report["detectors"] = list(detectors.names)
    progress(f"building {sizes.traces} runs of 100 spans with the OpenTelemetry SDK")
    traces = [encode_batches(t, BATCH) for t in agent_traces(sizes.traces, prefix="bench")]
    spans = sizes.traces * len(_spans_of(traces[0]))
    with tempfile.TemporaryDirectory(prefix="trajwatch-bench-") as tmp_name:
        tmp = Path(tmp_name)
        latency_traces = [
            encode_batches(t, BATCH)
            # every other run loops: more alerts, so the p99 rests on more than a few
            for t in agent_traces(
                sizes.latency_traces, prefix="latency", first=sizes.traces, loop_every=2
            )
        ]
        pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
        latency: dict[str, Any] = {}
        for k in range(sizes.repeat):  # alternated, so a change in the machine's load hits both
            sub = tmp / f"run{k}"
            sub.mkdir()
            progress(f"replay ({k + 1} of {sizes.repeat})")
            replayed = _replay(traces, sub, detectors)
            progress(f"serve: the same spans over OTLP/HTTP ({k + 1} of {sizes.repeat})")
            last = k == sizes.repeat - 1
            rates = [spans / done["committed_s"] for _, done in pairs]
            served, measured = _serve(
                traces,
                latency_traces if last else [],
                replayed["sessions"],
                sub,
                config_path,
                progress,
                earlier_rates=rates,
            )
            pairs.append((replayed, served))
            latency = measured or latency
        progress(f"memory: {sizes.sessions:,} active sessions in a fresh process")
        memory = _memory(sizes, tmp, config_path)
        progress("stages")
        stages = _stages(traces, replayed, tmp, detectors)
        if sizes.attribute:
            progress("stages: the replay once more, attributed, in a fresh process")
            child = _start_attributed(replayed, tmp, config_path)
            stages["attributed"] = _attributed(child, replayed)
    raw = stages.pop("from_string_spans_per_s")
    for key in ("state_bytes_end_of_run_max", "state_bytes_end_of_run_by_detector"):
        memory[key] = stages.pop(key)
    replay_rates = [spans / r["seconds"] for r, _ in pairs]
    serve_rates = [spans / s["committed_s"] for _, s in pairs]
    replay_rate, serve_rate = statistics.median(replay_rates), statistics.median(serve_rates)
    mid = min(range(len(pairs)), key=lambda i: abs(serve_rates[i] - serve_rate))
    served = pairs[mid][1]
    # CPU seconds: steadier than wall time on a shared machine
    serve_cpus = [s["cpu_s"] for _, s in pairs if s["cpu_s"] is not None]
    cpu_ratios = [r["cpu_s"] / s["cpu_s"] for r, s in pairs if s["cpu_s"]]
    report["throughput"] = {
        "spans": spans,
        "steps": replayed["steps"],
        "alerts": len(replayed["alert_ids"]),
        "replay_rejudged_sessions": replayed["rejudged"],
        "replay_rejudged_steps": replayed["rejudged_steps"],
        "repeat": sizes.repeat,
        "replay_spans_per_s": round(replay_rate),
        "replay_spans_per_s_runs": [round(r) for r in replay_rates],
        "replay_cpu_s": round(statistics.median(r["cpu_s"] for r, _ in pairs), 3),
        "serve_spans_per_s": round(serve_rate),
        "serve_spans_per_s_runs": [round(r) for r in serve_rates],
        "serve_acknowledged_s": round(served["acknowledged_s"], 3),
        "serve_committed_s": round(served["committed_s"], 3),
        "serve_cpu_s": round(statistics.median(serve_cpus), 3) if serve_cpus else None,
        "serve_requests": served["requests"],
        "serve_retries_503": sum(s["retries"] for _, s in pairs),
        "serve_over_replay": round(
            statistics.median(s / r for s, r in zip(serve_rates, replay_rates, strict=True)), 3
        ),
        "serve_over_replay_cpu": round(statistics.median(cpu_ratios), 3) if cpu_ratios else None,
        "serve_alerts_equal_replay": all(s["alert_ids"] == r["alert_ids"] for r, s in pairs),
        "serve_steps": served["steps"],
        "serve_threads_cpu": Settings.from_env().cpu,  # what the serve child placed by
        "idle_flush_ms": IDLE_FLUSH_MS,
        "from_string_spans_per_s": round(raw),
        "replay_over_from_string": round(replay_rate / raw, 5),
        "serve_over_from_string": round(serve_rate / raw, 5),
    }
    report["latency"] = latency
    report["memory"] = memory
    report["stages_us_per_step"] = stages
    report["targets"] = _judge(report)
    return report


def _asdict(sizes: Sizes) -> dict[str, int]:
    return {f: getattr(sizes, f) for f in Sizes.__dataclass_fields__}


def _spans_of(batches: Sequence[bytes]) -> list[Any]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    out: list[Any] = []
    for body in batches:
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans:
            for ss in rs.scope_spans:
                out.extend(ss.spans)
    return out


def _judge(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ratio = report["throughput"]["serve_over_replay"]
    p99 = report["latency"]["p99_ms"]
    mem = report["memory"]
    rss_10k = mem["bytes_per_session"] * 10_000 + mem["rss_base_bytes"]
    state = max(mem["state_bytes_max"], mem["state_bytes_end_of_run_max"])
    return {
        "serve_over_replay": {"target": ">= 0.8", "value": ratio, "met": ratio >= 0.8},
        "p99_span_to_alert_ms": {
            "target": "< 250 (lateness wait excluded)",
            "value": p99,
            "met": p99 is not None and p99 < TARGETS["p99_ms"],
        },
        "rss_at_10k_sessions": {
            "target": "< 1 GiB",
            "value": rss_10k,
            "measured_at": mem["sessions"],
            "met": rss_10k < TARGETS["rss_bytes_at_10k"],
        },
        "detector_state_per_session": {
            "target": "<= 64 KiB",
            "value": state,
            "met": state <= TARGETS["state_bytes"],
        },
    }


# -- 1. replay -----------------------------------------------------------------------------


def _replay(traces: list[list[bytes]], tmp: Path, detectors: Any) -> dict[str, Any]:
    from models.store import Store
    from trajwatch.bench.spans import length_delimited
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    folder = tmp / "recorded"
    folder.mkdir()
    for i, batches in enumerate(traces):
        (folder / f"run-{i:05d}.otlp.binpb").write_bytes(length_delimited(batches))
    url = f"sqlite:///{tmp / 'replay.db'}"
    Store.open(url).close()  # the migrations of a new file are not the replay's cost
    settings = Settings.from_env(db_url=url)  # TRAJWATCH_* variables apply to both phases
    wall, cpu = time.perf_counter(), time.process_time()
    summary = replay([folder], settings=settings, detectors=detectors)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "seconds": wall,
        "cpu_s": cpu,
        "steps": summary.steps,
        "rejudged": summary.rejudged,
        "rejudged_steps": summary.rejudged_steps,
        "alert_ids": sorted(a.alert_id for a in summary.alerts),
        "url": url,
        "folder": folder,
        "sessions": summary.sessions,
    }


# -- 2 and 3. serve ------------------------------------------------------------------------


class _Client:
    """One keep-alive OTLP/HTTP exporter: POST, and on 503 wait Retry-After and resend."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.retries = 0

    def post(self, body: bytes) -> None:
        while True:
            self.conn.request(
                "POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"}
            )
            response = self.conn.getresponse()
            response.read()
            if response.status == 200:
                return
            if response.status != 503:
                raise RuntimeError(f"serve answered {response.status}")
            self.retries += 1
            time.sleep(float(response.getheader("Retry-After") or 1))


def _interleaved(traces: list[list[bytes]]) -> list[bytes]:
    """The requests of several runs, one round of each in turn (a fleet's order)."""
    out: list[bytes] = []
    for r in range(max(map(len, traces))):
        out.extend(batches[r] for batches in traces if r < len(batches))
    return out


def _send_all(port: int, traces: list[list[bytes]]) -> int:
    """Each of :data:`SENDERS` clients sends its share of the runs in order; retries."""
    clients = [_Client(port) for _ in range(SENDERS)]
    shares = [_interleaved(traces[i::SENDERS]) for i in range(SENDERS)]
    threads = [
        threading.Thread(target=lambda c=c, s=s: [c.post(b) for b in s])
        for c, s in zip(clients, shares, strict=True)
        if s
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(c.retries for c in clients)


def _send_paced(port: int, traces: list[list[bytes]], spans_per_s: float) -> int:
    """The runs' requests, interleaved, each sent at its time on a schedule of
    ``spans_per_s``, by :data:`SENDERS` clients taking turns."""
    requests_ = _interleaved(traces)
    gap = BATCH / spans_per_s
    start = time.monotonic() + 0.05
    clients = [_Client(port) for _ in range(SENDERS)]

    def sender(k: int) -> None:
        for n in range(k, len(requests_), SENDERS):
            delay = start + n * gap - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            clients[k].post(requests_[n])

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(c.retries for c in clients)


def _metric(port: int, names: Sequence[str]) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    out = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in out:
            out[name] = float(value)
    return out


def _settle(port: int, timeout: float = 600) -> None:
    """Until nothing is queued, held or live in the write-ahead log: all committed."""
    names = ("trajwatch_pending_steps", "trajwatch_inbound_records", "trajwatch_queue_depth")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_metric(port, names).values()):
            return
        time.sleep(0.02)
    raise RuntimeError("serve did not settle")


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of process ``pid`` (Linux), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _serve(
    traces: list[list[bytes]],
    latency_traces: list[list[bytes]],
    sessions: list[str],
    tmp: Path,
    config_path: Path | None,
    progress: Callable[[str], None],
    *,
    earlier_rates: Sequence[float] = (),
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One ``serve`` child: the throughput phase, then (given ``latency_traces``) the
    latency phase at half the median of this and ``earlier_rates``."""
    port = free_port()
    url = f"sqlite:///{tmp / 'serve.db'}"
    spec = {
        "db_url": url,
        "inbound_dir": str(tmp / "inbound"),
        "port": port,
        "config": str(config_path) if config_path else None,
    }
    child = _child("serve", spec)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", child)
        cpu0, wall0 = _cpu_seconds(child.pid), time.monotonic()
        retries = _send_all(port, traces)
        acknowledged = time.monotonic() - wall0
        _settle(port)
        committed = time.monotonic() - wall0
        cpu1 = _cpu_seconds(child.pid)
        spans = sum(len(_spans_of(t)) for t in traces)
        rate = statistics.median([*earlier_rates, spans / committed])
        mark = time.monotonic()
        lat_retries = 0
        if latency_traces:
            progress(f"latency: fresh runs at half of {rate:,.0f} spans/s")
            lat_retries = _send_paced(port, latency_traces, rate / 2)
            _settle(port)
    finally:
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=120)
    if child.returncode != 0:
        raise RuntimeError(f"the serve child failed: {err.decode()[-2000:]}")
    result = json.loads(out)
    from models.store import Store

    with Store.open(url) as store:  # the throughput phase's sessions, not the latency's
        ids = sorted(a.alert_id for a in store.alerts(sessions))
        steps = store.step_count(sessions)
    latencies = [ms for at, ms in result["latencies"] if at >= mark]
    served = {
        "acknowledged_s": acknowledged,
        "committed_s": committed,
        "cpu_s": None if cpu0 is None or cpu1 is None else round(cpu1 - cpu0, 3),
        "requests": sum(map(len, traces)),
        "retries": retries,
        "alert_ids": ids,
        "steps": steps,
    }
    if not latency_traces:
        return served, None
    latency = {
        "load_spans_per_s": round(rate / 2),
        "alerts": len(latencies),
        "p50_ms": _quantile(latencies, 0.5),
        "p99_ms": _quantile(latencies, 0.99),
        "max_ms": round(max(latencies), 1) if latencies else None,
        "retries_503": lat_retries,
        "lateness_ms": result["lateness_ms"],
        "idle_flush_ms": IDLE_FLUSH_MS,
    }
    return served, latency


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def _child(kind: str, spec: dict[str, Any]) -> subprocess.Popen[bytes]:
    """This module in a fresh interpreter, running :func:`_serve_child`,
    :func:`_memory_child` or :func:`_attributed_child` with ``spec``; its report is the
    JSON on its stdout."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "trajwatch.bench.run", kind, json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


class _Recorded:
    """A histogram that also keeps each observation with its time (the child's report)."""

    def __init__(self, histogram: Any) -> None:
        self.histogram = histogram
        self.values: list[tuple[float, float]] = []

    def observe(self, seconds: float) -> None:
        self.values.append((time.monotonic(), seconds * 1000))
        self.histogram.observe(seconds)


def _serve_child(spec: dict[str, Any]) -> None:
    """``serve`` as ``trajwatch serve`` runs it (no alert printing), until SIGTERM; then
    prints its latencies."""
    from trajwatch.config import detector_set, load_config
    from trajwatch.service.cpu_placement import place
    from trajwatch.service.serve import Service
    from trajwatch.settings import Settings

    settings = Settings.from_env(  # the environment's settings, as replay's
        db_url=spec["db_url"], inbound_dir=spec["inbound_dir"], idle_flush_ms=IDLE_FLUSH_MS
    )
    place(settings.cpu, single=True)
    config = load_config(Path(spec["config"]) if spec["config"] else None)
    service = Service(settings, detector_set(config), host="127.0.0.1", port=spec["port"])
    recorded = _Recorded(service.metrics.alert_latency)
    service.metrics.alert_latency = recorded  # type: ignore[assignment]
    status = service.run()
    print(json.dumps({"latencies": recorded.values, "lateness_ms": settings.lateness_ms}))
    sys.exit(status)


# -- 4. memory -----------------------------------------------------------------------------


def _memory(sizes: Sizes, tmp: Path, config_path: Path | None) -> dict[str, Any]:
    from trajwatch.bench.spans import agent_traces, encode_batches, length_delimited

    path = tmp / "sessions.binpb"
    spans_per_trace = 1 + 3 * sizes.session_rounds
    with path.open("wb") as out:
        chunk = 500
        for first in range(0, sizes.sessions, chunk):
            runs = agent_traces(
                min(chunk, sizes.sessions - first),
                spans_per_trace=spans_per_trace,
                round_s=5.0,
                prefix="active",
                first=first,
            )
            # every run's spans but its root (sent when a run ends): the sessions stay open
            out.write(length_delimited([encode_batches(run[:-1], len(run))[0] for run in runs]))
    spec = {
        "path": str(path),
        "db_url": f"sqlite:///{tmp / 'memory.db'}",
        "config": str(config_path) if config_path else None,
        "sessions": sizes.sessions,
    }
    child = _child("memory", spec)
    out_bytes, err = child.communicate(timeout=3600)
    if child.returncode != 0:
        raise RuntimeError(f"the memory child failed: {err.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(out_bytes)
    return result


def _rss_bytes() -> int:
    """Resident set size now (Linux /proc), else the peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return _peak_rss_bytes()


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _frames(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while True:
            n, shift = 0, 0
            while True:
                byte = f.read(1)
                if not byte:
                    return
                n |= (byte[0] & 0x7F) << shift
                shift += 7
                if not byte[0] & 0x80:
                    break
            yield f.read(n)


def _memory_child(spec: dict[str, Any]) -> None:
    """Feed every session's opening spans as ``serve`` does (a partition per trace, a
    commit per group of requests), never ending one; print RSS and state sizes."""
    import gc

    from ingest.pipeline.session_state import dump_analysis, dump_state
    from ingest.sources.otlp_http import decode_body
    from models.store import Store
    from trajwatch.config import detector_set, load_config
    from trajwatch.settings import Settings

    config = load_config(Path(spec["config"]) if spec["config"] else None)
    settings = Settings(db_url=spec["db_url"])
    store = Store.open(settings.db_url)
    from ingest.pipeline.engine import Pipeline

    pipeline = Pipeline(store, settings=settings, detectors=detector_set(config))
    gc.collect()
    base = _rss_bytes()
    for n, body in enumerate(_frames(Path(spec["path"]))):
        decoded = decode_body(
            "traces/proto",
            body,
            location="/v1/traces",
            max_attribute_bytes=settings.max_attribute_bytes,
        )
        pipeline.feed_decoded(decoded, partition=f"trace:{decoded.spans[0].trace_id}")
        if n % 64 == 63:
            pipeline.commit()
    pipeline.commit()
    gc.collect()
    end = _rss_bytes()
    sessions = list(pipeline._sessions.values())
    per_detector: dict[str, list[int]] = {}
    totals = []
    stored = []
    for session in sessions[:: max(1, len(sessions) // 200)]:
        total = 0
        for detector in session.detectors:
            size = len(pickle.dumps(detector.state_dict(), protocol=pickle.HIGHEST_PROTOCOL))
            per_detector.setdefault(detector.name, []).append(size)
            total += size
        totals.append(total)
        analysis = dump_analysis(features=session.features, detectors=session.detectors)
        stored.append(
            len(
                dump_state(
                    info=session.info,
                    compaction=session.compaction,
                    turns=session.turns,
                    analysis=analysis,
                    upto=session.next_seq,
                )
            )
        )
    active = spec["sessions"]
    print(
        json.dumps(
            {
                "sessions": active,
                "sessions_in_memory": len(sessions),
                "steps": pipeline.stats.steps,
                "pending_steps": pipeline.pending(),
                "rss_base_bytes": base,
                "rss_end_bytes": end,
                "rss_peak_bytes": max(_peak_rss_bytes(), end),  # both rounded to pages
                "bytes_per_session": round((end - base) / active),
                "state_bytes_median": round(statistics.median(totals)) if totals else 0,
                "state_bytes_max": max(totals, default=0),
                "stored_state_bytes_median": round(statistics.median(stored)) if stored else 0,
                "state_bytes_by_detector": {
                    name: round(statistics.median(sizes)) for name, sizes in per_detector.items()
                },
            }
        )
    )
    store.close()


# -- 5. stages -----------------------------------------------------------------------------


def _stages(
    traces: list[list[bytes]], replayed: dict[str, Any], tmp: Path, detectors: Any
) -> dict[str, Any]:
    """Each stage timed on its own over the same data, in µs per stored step."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from features.calls.step_features import analysed_view
    from features.redact.engine import redact_step
    from features.session.trajectory import TrajectoryFeatures
    from ingest.formats.otlp_proto import decode_otlp_proto
    from ingest.semconv.spans import spans_to_drafts
    from models.store import Store

    bodies = [b for batches in traces for b in batches]
    spans = sum(len(_spans_of(t)) for t in traces)
    with Store.open(replayed["url"]) as store:
        streams = [store.steps(s) for s in replayed["sessions"]]
        alerts = store.alerts(replayed["sessions"])
    steps = sum(map(len, streams))
    per = 1e6 / steps

    def clock(fn: Callable[[], object]) -> float:
        """CPU seconds of ``fn`` (single-threaded): a busy machine's waits are not in it."""
        start = time.process_time()
        fn()
        return time.process_time() - start

    raw_s = clock(lambda: [ExportTraceServiceRequest.FromString(b) for b in bodies])
    decoded: list[Any] = []
    decode_s = clock(lambda: decoded.extend(decode_otlp_proto(b, source="bench") for b in bodies))

    def normalise() -> None:
        for batch in decoded:
            for draft in spans_to_drafts(batch.spans):
                redact_step(draft.step)

    normalise_s = clock(normalise)

    views: list[list[Any]] = []

    def features() -> None:
        # the analysed views the detectors share, and the features the trajectory reads
        # (each detector's own fields are worked out on its first read: in its row below)
        for stream in streams:
            trajectory = TrajectoryFeatures()
            views.append([analysed_view(step) for step in stream])
            for view in views[-1]:
                trajectory.observe(view, seq=view.seq)

    features_s = clock(features)
    by_detector = {}
    finished: dict[int, list[Any]] = {}  # each run's detectors after its last step
    for prototype in detectors.prototypes:

        def run(prototype: Any = prototype) -> None:
            for stream in views:
                detector = prototype.clone()
                for view in stream:
                    detector.update(view)
                finished.setdefault(id(stream), []).append(detector)

        by_detector[prototype.name] = round(clock(run) * per, 2)

    alerts_of: dict[str, list[Any]] = {}
    for alert in alerts:
        alerts_of.setdefault(alert.session_id, []).append(alert)

    def write() -> None:  # in commits of 25 sessions, as replay's commits hold many
        with Store.open(f"sqlite:///{tmp / 'stages.db'}") as fresh:
            for start in range(0, len(streams), 25):
                with fresh.unit() as unit:
                    for stream in streams[start : start + 25]:
                        unit.add_steps_or_reject(stream)
                        unit.add_alerts_or_reject(alerts_of.get(stream[0].session_id, []))

    Store.open(f"sqlite:///{tmp / 'stages.db'}").close()
    store_s = clock(write)
    end_by_detector: dict[str, list[int]] = {}
    for live in finished.values():
        for d in live:
            size = len(pickle.dumps(d.snapshot(), protocol=pickle.HIGHEST_PROTOCOL))
            end_by_detector.setdefault(d.name, []).append(size)
    end_sizes = [sum(sizes) for sizes in zip(*end_by_detector.values(), strict=True)]
    replay_us = replayed["cpu_s"] * per
    measured = (decode_s + normalise_s + features_s + store_s) * per + sum(by_detector.values())
    return {
        "decode": round(decode_s * per, 2),
        "normalise": round(normalise_s * per, 2),
        "features": round(features_s * per, 2),
        "detectors": by_detector,
        "detectors_total": round(sum(by_detector.values()), 2),
        "store": round(store_s * per, 2),
        "rest": round(replay_us - measured, 2),
        "replay_total": round(replay_us, 2),
        "state_bytes_end_of_run_max": max(end_sizes, default=0),
        "state_bytes_end_of_run_by_detector": {
            name: round(statistics.median(sizes)) for name, sizes in end_by_detector.items()
        },
        "from_string_spans_per_s": spans / raw_s,
    }


def _start_attributed(
    replayed: dict[str, Any], tmp: Path, config_path: Path | None
) -> subprocess.Popen[bytes]:
    """Phase 1's replay once more with every stage marked
    (:mod:`trajwatch.bench.attribution`), in a fresh process as phase 1's ran in a clean
    one (in this one, what the earlier phases left, freed memory and garbage, would be
    charged to whichever stage met it: ~13 µs a step to opening sessions, seen after
    building the runs here, against ~1 in a clean process and in a profile);
    :func:`_attributed` waits for its report."""
    from models.store import Store

    url = f"sqlite:///{tmp / 'attributed.db'}"
    Store.open(url).close()
    spec = {
        "folder": str(replayed["folder"]),
        "db_url": url,
        "config": str(config_path) if config_path else None,
    }
    return _child("attributed", spec)


def _attributed(child: subprocess.Popen[bytes], replayed: dict[str, Any]) -> dict[str, Any]:
    """The attributed replay's report: CPU µs per stored step by stage, largest first,
    beside the same replay's total unmarked (phase 1's), the stage budget scaled to this
    machine (:mod:`trajwatch.bench.budget`; empty without the file) and the stages over it."""
    from trajwatch.bench.budget import calibration, load_budget, over_budget

    out, err = child.communicate(timeout=3600)
    if child.returncode != 0:
        raise RuntimeError(f"the attributed replay failed: {err.decode()[-2000:]}")
    done = json.loads(out)
    per = 1e6 / done["steps"]
    ordered = sorted(done["seconds"].items(), key=lambda kv: -kv[1])
    stages = {name: round(s * per, 2) for name, s in ordered}
    budget = load_budget()
    if budget is not None:
        budget = budget.scaled(calibration())
    return {
        "stages": stages,
        "total": round(done["total_s"] * per, 2),
        "unmarked_total": round(replayed["cpu_s"] * per, 2),
        "budget": {k: round(v, 1) for k, v in budget.stages.items()} if budget else {},
        "budget_total": round(budget.total, 1) if budget and budget.total else None,
        "budget_scale": round(budget.scale, 3) if budget else None,
        "over_budget": over_budget(stages, budget),
    }


def _attributed_child(spec: dict[str, Any]) -> None:
    from trajwatch.bench.attribution import attributed_replay
    from trajwatch.config import detector_set, load_config

    detectors = detector_set(load_config(Path(spec["config"]) if spec["config"] else None))
    print(json.dumps(attributed_replay(Path(spec["folder"]), spec["db_url"], detectors)))


# -- the report ------------------------------------------------------------------------------


def format_report(report: dict[str, Any], command: str) -> str:
    """The report as the dated measurements (docs/measurements/) show it: a Markdown table."""
    m, t, lat, mem, st = (
        report["machine"],
        report["throughput"],
        report["latency"],
        report["memory"],
        report["stages_us_per_step"],
    )
    mib = 2**20
    rows = [
        (
            "`ExportTraceServiceRequest.FromString` alone",
            f"{t['from_string_spans_per_s']:,} spans/s",
            "1",
        ),
        (
            "`replay` of the same requests as recordings",
            f"{t['replay_spans_per_s']:,} spans/s ({t['replay_cpu_s']} s CPU)",
            f"{t['replay_over_from_string']:.4f}",
        ),
        (
            "`serve`: OTLP/HTTP POSTs, first → all committed",
            f"{t['serve_spans_per_s']:,} spans/s ({t['serve_cpu_s']} s CPU; acknowledged in "
            f"{t['serve_acknowledged_s']} s; {t['serve_retries_503']} × 503; threads: "
            f"TRAJWATCH_CPU={t['serve_threads_cpu']})",
            f"{t['serve_over_from_string']:.4f}",
        ),
        (
            "`replay`: sessions judged again in event-time order (a late step: the root span "
            "ends last); `benchmarks/bench_rejudge.py` prices it per step",
            f"{t['replay_rejudged_sessions']:,} settlings, {t['replay_rejudged_steps']:,} steps "
            f"judged again of {t['steps']:,}",
            "",
        ),
        (
            "`serve` ÷ `replay` (target ≥ 0.8)",
            f"**{t['serve_over_replay']:.2f}×** by wall time, {t['serve_over_replay_cpu']}× by "
            f"CPU seconds (runs, spans/s: replay {_runs(t['replay_spans_per_s_runs'])}, serve "
            f"{_runs(t['serve_spans_per_s_runs'])}); alert ids equal: "
            f"{t['serve_alerts_equal_replay']}",
            "",
        ),
        (
            f"span → alert at half load ({lat['load_spans_per_s']:,} spans/s), p50 / p99 / max "
            "(target p99 < 250 ms)",
            f"{lat['p50_ms']} / **{lat['p99_ms']}** / {lat['max_ms']} ms over {lat['alerts']} "
            f"alerts; not in it: the lateness wait ({lat['lateness_ms']:,} ms of event time) "
            f"and a run's idle flush ({lat['idle_flush_ms']} ms here)",
            "",
        ),
        (
            f"{mem['sessions']:,} active sessions: RSS base / end / peak (target < 1 GiB)",
            f"{mem['rss_base_bytes'] / mib:.0f} / {mem['rss_end_bytes'] / mib:.0f} / "
            f"{mem['rss_peak_bytes'] / mib:.0f} MiB; **{mem['bytes_per_session']:,} B** a session",
            "",
        ),
        (
            "detector state a session, pickled: median / max (target ≤ 64 KiB)",
            f"{mem['state_bytes_median']:,} / {mem['state_bytes_max']:,} B; largest: "
            + ", ".join(
                f"{k} {v:,}"
                for k, v in sorted(mem["state_bytes_by_detector"].items(), key=lambda kv: -kv[1])[
                    :3
                ]
            )
            + f"; stored (compressed, with features): {mem['stored_state_bytes_median']:,} B; "
            f"at a 100-span run's end: max {mem['state_bytes_end_of_run_max']:,} B ("
            + ", ".join(
                f"{k} {v:,}"
                for k, v in sorted(
                    mem["state_bytes_end_of_run_by_detector"].items(), key=lambda kv: -kv[1]
                )[:3]
            )
            + ")",
            "",
        ),
    ]
    stages = [
        ("decode (protobuf → span records)", st["decode"]),
        ("normalise (span → step drafts, redaction)", st["normalise"]),
        ("features (the per-step feature pass)", st["features"]),
        *((f"detector `{name}`", us) for name, us in st["detectors"].items()),
        ("store (steps and alerts into SQLite)", st["store"]),
        ("the rest (ordering, sequencing, dedup, session state)", st["rest"]),
        ("**replay, all of it (CPU)**", st["replay_total"]),
    ]
    attributed = st.get("attributed")
    lines = [
        f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, "
        f"load {m['load_1m']} at the start; command: `{command}`",
        f"input: {t['spans']:,} spans (100 a run, {report['batch']} a request, "
        f"{SENDERS} exporters), {t['steps']:,} steps, {t['alerts']} alerts; "
        f"{len(report['detectors'])} detectors",
        "",
        "| row | figure | ratio to `FromString` |",
        "|---|---|---:|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
        "",
        "| stage (each timed on its own, CPU) | µs per step |",
        "|---|---:|",
        *(f"| {name} | {us:.1f} |" for name, us in stages),
        "",
        *(_attributed_rows(attributed) if attributed else []),
        "targets: "
        + "; ".join(
            f"{name} {'met' if judged['met'] else 'NOT MET'}"
            for name, judged in report["targets"].items()
        ),
    ]
    return "\n".join(lines)


def _attributed_rows(attributed: dict[str, Any]) -> list[str]:
    budget = attributed.get("budget", {})
    total = attributed.get("budget_total")
    over = attributed.get("over_budget", [])

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    return [
        "| the replay once more, by stage (CPU, sampled at the kernel tick) | µs per step "
        "| budget |",
        "|---|---:|---:|",
        *(
            f"| {name}{' **over**' if name in over else ''} | {us:.1f} | {cell(budget.get(name))} |"
            for name, us in attributed["stages"].items()
        ),
        f"| **replay with the stages marked, all of it (CPU)** | {attributed['total']:.1f} "
        f"| {cell(total)} |",
        f"| (the same replay unmarked, phase 1) | {attributed['unmarked_total']:.1f} | |",
        "",
        "over its budget (benchmarks/stage_budget.toml, scaled "
        f"×{attributed.get('budget_scale') or 1:.2f} to this machine): "
        + (", ".join(over) if over else "none"),
        "",
    ]


def _runs(rates: Sequence[int]) -> str:
    return " / ".join(f"{r:,}" for r in rates)


def main(argv: Sequence[str]) -> None:
    """The children's entry point (``python -m trajwatch.bench.run serve|memory|attributed
    SPEC``)."""
    kind, spec = argv[0], json.loads(argv[1])
    if kind == "serve":
        _serve_child(spec)
    elif kind == "memory":
        _memory_child(spec)
    elif kind == "attributed":
        _attributed_child(spec)
    else:
        raise SystemExit(f"unknown child {kind!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
