"""The ``trajwatch`` command line.

``trajwatch replay PATH...``              recorded files through the pipeline into the store
``trajwatch eval PATH... --labels FILE``  detectors scored against labelled recordings
``trajwatch schema``                      the session-event JSON Schema
``trajwatch defaults``                    every detector parameter and its default (TOML)
``trajwatch migrate``                     upgrade the store's schema to the current version
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from detectors.registry import DetectorSet
from ingest.errors import TrajwatchError
from ingest.session_events import schema
from models.store import Store
from trajwatch.config import defaults_toml, detector_set, load_config
from trajwatch.evaluate import evaluate
from trajwatch.replay import ReplaySummary, replay
from trajwatch.settings import Settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trajwatch", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rp = sub.add_parser("replay", help="run recorded files through the pipeline")
    rp.add_argument(
        "paths", nargs="+", type=Path, help="files or folders (.gz/.xz read transparently)"
    )
    rp.add_argument("--db", help="store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)")
    rp.add_argument("--json", action="store_true", help="print exactly one JSON object")
    rp.add_argument("--lateness-ms", type=int, help="event-time lateness for ordering")
    rp.add_argument("--session-attribute", help="extra span attribute that names the session")
    rp.add_argument(
        "--config", type=Path, help="TOML config (default: ./trajwatch.toml if present)"
    )
    ev = sub.add_parser("eval", help="score the detectors against labelled recordings")
    ev.add_argument("paths", nargs="+", type=Path, help="recorded files or folders")
    ev.add_argument(
        "--labels",
        type=Path,
        required=True,
        help="labels.csv of fixtures/, or a corpus labels_index.csv",
    )
    ev.add_argument("--db", help="keep the replayed store here (default: a temporary SQLite file)")
    ev.add_argument("--json", action="store_true", help="print exactly one JSON object")
    ev.add_argument(
        "--config", type=Path, help="TOML config (default: ./trajwatch.toml if present)"
    )
    sub.add_parser("schema", help="print the session-event JSON Schema")
    sub.add_parser("defaults", help="print every detector parameter and its default, as TOML")
    mp = sub.add_parser("migrate", help="upgrade the store's schema")
    mp.add_argument("--db", help="store URL")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "schema":
            print(json.dumps(schema(), indent=2))
            return 0
        if args.command == "defaults":
            print(defaults_toml(), end="")
            return 0
        if args.command == "migrate":
            settings = Settings.from_env(db_url=args.db)
            Store.open(settings.db_url).close()
            print(f"store at {settings.db_url} is at the current schema")
            return 0
        if args.command == "eval":
            settings = Settings.from_env(db_url=args.db)
            return _eval(args, settings)
        settings = Settings.from_env(
            db_url=args.db, lateness_ms=args.lateness_ms, session_attribute=args.session_attribute
        )
        return _replay(args, settings)
    except TrajwatchError as exc:
        print(f"trajwatch: {exc}", file=sys.stderr)
        return 2


def _replay(args: argparse.Namespace, settings: Settings) -> int:
    progress = None
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(desc="replay", unit="recording", file=sys.stderr)
        progress = bar.update
    try:
        summary = replay(
            args.paths, settings=settings, detectors=_detectors(args, settings), progress=progress
        )
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps(summary.to_json()))
    else:
        print(_human(summary, settings.db_url))
    return 0


def _config_path(args: argparse.Namespace, settings: Settings) -> Path | None:
    if args.config is not None:
        return Path(args.config)
    if settings.config_path:
        return Path(settings.config_path)
    default = Path("trajwatch.toml")
    return default if default.exists() else None


def _detectors(args: argparse.Namespace, settings: Settings) -> DetectorSet:
    return detector_set(load_config(_config_path(args, settings)))


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    result = evaluate(
        args.paths, labels_file=args.labels, settings=settings, detectors=_detectors(args, settings)
    )
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(f"{result.sessions} sessions replayed, {result.labelled} labelled")
        print(result.table())
    return 0


def _human(summary: ReplaySummary, db_url: str) -> str:
    lines = [
        f"replayed {summary.files} files into {db_url}",
        f"  sessions      {len(summary.sessions)}",
        f"  steps         {summary.steps} ({summary.new_steps} new; "
        f"{summary.duplicates} duplicate deliveries dropped)",
        f"  dead letters  {summary.dead_letters}",
        f"  alerts        {len(summary.alerts)}",
    ]
    for alert in summary.alerts:
        lines.append(
            f"    [{alert.severity}] {alert.detector} session={alert.session_id} "
            f"onset=step {alert.onset_seq} score={alert.score:.2f} action={alert.action}: "
            f"{alert.reason}"
        )
    if summary.skipped:
        lines.append(f"  skipped {len(summary.skipped)} files that are not recordings")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
