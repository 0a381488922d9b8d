"""``trajwatch replay`` over recorded files: formats, bundles, compression, the JSON shape."""

from __future__ import annotations

import csv
import gzip
import json
import lzma
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.formats.otlp_json import to_otlp_json
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.cli.main import main

CORPUS = ROOT.parent / "shared" / "corpus"
T0 = 1_767_000_000


def events(session: str = "bundle-1") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "type": "session_start",
            "session_id": session,
            "seq": 0,
            "ts": T0,
            "goal": "Update the docs",
        },
    ]
    for i in range(3):
        out.append(
            {
                "type": "tool_call",
                "session_id": session,
                "seq": 1 + 2 * i,
                "ts": T0 + 1 + 2 * i,
                "tool": "read_file",
                "call_id": f"c{i}",
                "arguments": {"path": f"docs/p{i}.md"},
            }
        )
        out.append(
            {
                "type": "tool_result",
                "session_id": session,
                "seq": 2 + 2 * i,
                "ts": T0 + 2 + 2 * i,
                "call_id": f"c{i}",
                "ok": True,
                "output": "text",
            }
        )
    out.append(
        {
            "type": "session_end",
            "session_id": session,
            "seq": 7,
            "ts": T0 + 9,
            "status": "success",
            "claimed_done": True,
        }
    )
    return out


def write_bundle(folder: Path) -> None:
    folder.mkdir(parents=True)
    evs = events()
    (folder / "session.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    with (folder / "tool_calls.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "session_id",
                "seq",
                "ts",
                "call_id",
                "tool",
                "arguments",
                "ok",
                "error",
                "output_bytes",
            ]
        )
        for e in evs:
            if e["type"] == "tool_call":
                writer.writerow(
                    [
                        e["session_id"],
                        e["seq"],
                        e["ts"],
                        e["call_id"],
                        e["tool"],
                        json.dumps(e["arguments"]),
                        "true",
                        "",
                        "4",
                    ]
                )
    request = ExportTraceServiceRequest()  # an empty trace.json still parses
    (folder / "trace.json").write_text(json.dumps(to_otlp_json(request)))


def replay_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["replay", *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one JSON object
    result: dict[str, Any] = json.loads(out)
    return result


def test_debug_bundle_files_are_one_session_stored_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_bundle(tmp_path / "bundle")
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    result = replay_json(capsys, str(tmp_path / "bundle"), "--db", db)
    assert set(result) == {
        "sessions",
        "steps",
        "dead_letters",
        "alerts",
        "skipped",
        "dead_letter_reasons",
        "would_fire",
    }
    assert result == {
        "sessions": 1,
        "steps": 8,
        "dead_letters": 0,
        "alerts": [],
        "skipped": [],
        "dead_letter_reasons": [],
        "would_fire": [],
    }
    again = replay_json(capsys, str(tmp_path / "bundle"), "--db", db)
    assert again == result
    with Store.open(db) as store:
        steps = store.steps("bundle-1")
    assert [s.kind for s in steps][:3] == ["start", "tool_call", "tool_result"]
    assert len(steps) == 8


def test_compressed_files_and_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps(e) for e in events("gz-1")]
    lines.insert(3, '{"type": "tool_call", "session_id": "gz-1"')  # truncated line
    lines.insert(5, json.dumps({"type": "tool_call", "session_id": "gz-1", "seq": 99, "ts": T0}))
    (tmp_path / "a.events.jsonl.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
    (tmp_path / "b.events.jsonl.xz").write_bytes(
        lzma.compress("\n".join(json.dumps(e) for e in events("xz-1")).encode())
    )
    (tmp_path / "README.md").write_text("not a recording")
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    result = replay_json(capsys, str(tmp_path), "--db", db)
    assert result["sessions"] == 2 and result["steps"] == 16 and result["dead_letters"] == 2
    with Store.open(db) as store:
        letters = sorted(store.dead_letters(), key=lambda d: d.location)
    assert letters[0].location.endswith("a.events.jsonl.gz:4")
    assert letters[0].reason.startswith("invalid JSON")
    assert "'tool' is a required property" in letters[1].reason


def test_missing_path_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "nope"), "--db", f"sqlite:///{tmp_path}/x.db"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.mark.skipif(
    not (CORPUS / "trail").exists(), reason="needs ../shared/corpus beside the repo"
)
def test_trail_traces_replay_as_agent_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted((CORPUS / "trail" / "traces" / "gaia").glob("*.json.xz"))[:3]
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    result = replay_json(capsys, *map(str, files), "--db", db)
    assert result["sessions"] == 3 and result["dead_letters"] == 0
    with Store.open(db) as store:
        trace_id = files[1].name.split(".")[0]
        steps = store.steps(trace_id)
    kinds = {s.kind for s in steps}
    assert {"start", "model_call", "tool_call", "tool_result"} <= kinds
    labelled = {s.source_ref.split(":")[1] for s in steps}
    assert len(labelled) > 5  # evidence links back to TRAIL span ids


@pytest.mark.slow  # the trajwatch command as a process
def test_console_script_prints_a_summary(tmp_path: Path) -> None:
    write_bundle(tmp_path / "bundle")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trajwatch.cli.main",
            "replay",
            str(tmp_path / "bundle"),
            "--db",
            f"sqlite:///{tmp_path / 'tw.db'}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert "sessions      1" in proc.stdout and "dead letters  0" in proc.stdout
