"""A session's debug bundle, as the session page's download button gives it: a zip of one
folder that ``trajwatch replay`` reads back (unzip, then ``trajwatch replay FOLDER``).

- ``session.jsonl``: the session's stored steps, one per line, each whole and with its
  stored id (:mod:`ingest.formats.step_lines`, the ``step`` entry of the format table) — the store
  keeps steps, not the spans and events they were made of, so this is what replays;
  replayed with the same detector config, it raises the stored alerts, with the same ids;
- ``trace.json``: an OTLP/JSON document holding no spans (the spans behind each step are
  named by its ``source_ref``, ``trace_id:span_id``);
- ``tool_calls.csv``: the header of the bundle's tool-call table only — the tool calls
  are steps of ``session.jsonl``, and rows here would be read a second time;
- ``alerts.json``: the stored alerts, as ``trajwatch replay --json`` prints them.

Everything in it comes from the store, which holds redacted text only.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Sequence

from ingest.formats.step_lines import step_line
from ingest.formats.tool_calls_csv import TOOL_CALLS_COLUMNS
from models.records import Alert, Step

TOOL_CALLS_HEADER = (*TOOL_CALLS_COLUMNS, "error", "output_bytes")


def folder_name(session_id: str) -> str:
    """A file-system-safe folder name for the session's bundle."""
    return "bundle-" + (re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:120] or "session")


def bundle_files(steps: Sequence[Step], alerts: Sequence[Alert]) -> dict[str, bytes]:
    """The bundle's files by name."""
    lines = "".join(
        json.dumps(step_line(s), ensure_ascii=False, separators=(",", ":")) + "\n" for s in steps
    )
    table = io.StringIO()
    csv.writer(table).writerow(TOOL_CALLS_HEADER)
    return {
        "session.jsonl": lines.encode("utf-8"),
        "trace.json": json.dumps({"resourceSpans": []}).encode(),
        "tool_calls.csv": table.getvalue().encode(),
        "alerts.json": json.dumps({"alerts": [a.to_json() for a in alerts]}, indent=1).encode(),
    }


def bundle_zip(session_id: str, steps: Sequence[Step], alerts: Sequence[Alert]) -> bytes:
    """The bundle as zip bytes: one folder, :func:`folder_name`, holding the files."""
    out = io.BytesIO()
    folder = folder_name(session_id)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in bundle_files(steps, alerts).items():
            archive.writestr(f"{folder}/{name}", data)
    return out.getvalue()
