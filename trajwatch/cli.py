"""The ``trajwatch`` console script: :mod:`ingest.cli`'s commands, plus ``serve``.

``trajwatch serve [--db URL] [--host H] [--port P] [--config FILE]``  the live service:
OTLP/HTTP on :4318, the pipeline, the detectors and the store in one process.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ingest import cli as base
from ingest.errors import TrajwatchError
from ingest.settings import Settings


def parser() -> argparse.ArgumentParser:
    """ingest.cli's parser with the ``serve`` subcommand added."""
    top = base._parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    sp = sub.add_parser("serve", help="run the live service (OTLP/HTTP receiver + pipeline)")
    sp.add_argument("--db", help="store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)")
    sp.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    sp.add_argument("--port", type=int, default=4318, help="port (default: 4318, OTLP/HTTP's)")
    sp.add_argument(
        "--config", type=Path, help="TOML config (default: ./trajwatch.toml if present)"
    )
    sp.add_argument(
        "--inbound-dir",
        help="write-ahead log folder (default: $TRAJWATCH_INBOUND_DIR or ./trajwatch-inbound)",
    )
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "serve":
        return base.main(argv)
    try:
        from trajwatch.serve import serve  # uvicorn and starlette load only for serve

        settings = Settings.from_env(db_url=args.db, inbound_dir=args.inbound_dir)
        return serve(settings, base._detectors(args, settings), host=args.host, port=args.port)
    except TrajwatchError as exc:
        print(f"trajwatch: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
