"""Replay: a recorded file (chosen on the server, or uploaded) through the same pipeline
and detectors into a scratch SQLite store; its alerts compared, by id, with the live
store's or with a previous replay's."""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from dashboards.context import Context
from dashboards.markdown import escape
from dashboards.session_view import compare_alerts
from models.errors import UserError
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

LIVE = "the live store"


def render(ctx: Context) -> None:
    st.title("Replay")
    st.caption(
        "Runs a recording through the pipeline and the configured detectors into a scratch "
        "SQLite store (the live store is not touched), then compares the alerts by id."
    )
    path_text = st.text_input(
        "Recording on the server (a file, a bundle folder, or a folder of recordings)",
        key="r_path",
    )
    uploads = st.file_uploader(
        "…or upload the files of one recording (or a bundle .zip)",
        accept_multiple_files=True,
        key="r_upload",
    )
    if st.button("Replay", type="primary", key="r_run"):
        try:
            paths = _inputs(path_text, uploads or [])
            _run(ctx, paths)
        except UserError as error:  # may quote a path or a zip member: text
            st.error(escape(error))
    runs: dict[str, dict[str, Any]] = st.session_state.get("replays", {})
    if not runs:
        return
    names = list(runs)
    latest = st.selectbox("Replay", names[::-1], key="r_pick")
    run = runs[latest]
    s = st.columns(4)
    s[0].metric("Sessions", len(run["sessions"]))
    s[1].metric("Steps", run["steps"])
    s[2].metric("Alerts", len(run["alerts"]))
    s[3].metric("Dead letters", run["dead_letters"])
    others = [LIVE, *[n for n in names if n != latest]]
    against = st.selectbox("Compare with", others, key="r_against")
    if against == LIVE:
        theirs = ctx.store.alerts(run["sessions"]) if run["sessions"] else []
    else:
        theirs = runs[against]["alerts"]
    table = compare_alerts(theirs, run["alerts"]).with_columns(
        pl.col("in").replace(
            {"stored only": f"{_short(against)} only", "replay only": "this replay only"}
        )
    )
    same = table.filter(pl.col("in") == "both").height
    if same == table.height:
        st.success(f"The same {same} alerts, by id, as {escape(against)}.")
    else:
        st.warning(
            f"{same} alerts in both; {table.height - same} differ (by id) from {escape(against)}."
        )
    st.dataframe(table, hide_index=True, width="stretch", key="r_compare")


def _short(name: str) -> str:
    return "live" if name == LIVE else name


def _inputs(path_text: str, uploads: Sequence[UploadedFile]) -> list[Path]:
    if uploads:
        folder = Path(tempfile.mkdtemp(prefix="trajwatch-upload-"))
        for upload in uploads:
            data = upload.getvalue()
            if upload.name.endswith(".zip"):
                with zipfile.ZipFile(io.BytesIO(data)) as archive:
                    _safe_extract(archive, folder)
            else:
                (folder / Path(upload.name).name).write_bytes(data)
        entries = list(folder.iterdir())
        return entries if len(entries) == 1 and entries[0].is_dir() else [folder]
    if not path_text.strip():
        raise UserError("choose a recording: a path on the server, or upload its files")
    path = Path(path_text.strip()).expanduser()
    if not path.exists():
        raise UserError(f"{path}: no such file or folder; give a recording's path on the server")
    return [path]


def _safe_extract(archive: zipfile.ZipFile, folder: Path) -> None:
    root = folder.resolve()
    for member in archive.infolist():
        target = (folder / member.filename).resolve()
        if not target.is_relative_to(root):
            raise UserError(f"the zip holds {member.filename!r}, outside its folder; not extracted")
    archive.extractall(folder)


def _run(ctx: Context, paths: list[Path]) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="trajwatch-replay-")) / "replay.db"
    settings = Settings.from_env(db_url=f"sqlite:///{scratch}")
    with st.spinner("Replaying…"):
        summary = replay(paths, settings=settings, detectors=ctx.detectors)
    runs = st.session_state.setdefault("replays", {})
    name = f"#{len(runs) + 1} {', '.join(p.name for p in paths)[:60]}"
    runs[name] = {
        "sessions": summary.sessions,
        "steps": summary.steps,
        "alerts": summary.alerts,
        "dead_letters": summary.dead_letters,
        "db": str(scratch),
    }
    st.session_state["r_pick"] = name
    st.session_state.pop("r_against", None)
