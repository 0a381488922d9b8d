"""The ``trajwatch`` command line.

``trajwatch replay PATH...``              recorded files through the pipeline into the store
``trajwatch worker --bootstrap-servers H:P``  one Kafka consumer-group worker (run N)
``trajwatch eval PATH... --labels FILE``  detectors scored against labelled recordings
``trajwatch dead-letters``                what could not be read, and why (newest first)
``trajwatch schema``                      the session-event JSON Schema
``trajwatch defaults``                    every detector parameter and its default (TOML)
``trajwatch migrate``                     upgrade the store's schema to the current version
``trajwatch deliveries list|redeliver|enable``  the webhook outbox: show, resend, re-enable
``trajwatch dispatch``                    send the outbox (what serve and worker run inside)
``trajwatch actions backtest --since T``  what a candidate action policy would have fired
``trajwatch breaker [close|show KEY]``    the reference circuit breaker (webhooks, Claude Code hook)
``trajwatch ui [--db URL] [--port P]``    the explorer (Streamlit) on the store
``trajwatch bench [--json] [--quick]``    what serve and replay cost on realistic agent spans

A mistake of the user's (a flag, a setting, a file, the store URL: any
:class:`~models.errors.UserError`) is one line on stderr, ``trajwatch: error: <what is
wrong>; <what to do>``, and exit code 2. Any other failure (the database lost mid-run, a
bug) is one line too, and exit code 1. ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import traceback
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from sqlalchemy.exc import SQLAlchemyError

from detectors.registry import DetectorSet
from features.policy.check import Policy
from features.policy.instructions import derive, to_toml
from features.redact.engine import redact
from ingest.formats.session_events import schema
from ingest.pipeline.sinks import Sink
from models.errors import ConfigError, StoreOpenError, UserError
from models.open_errors import shown, sqlite_file
from models.records import DeadLetter
from models.store import Store
from models.tables import DELIVERY_STATUSES
from trajwatch import listing
from trajwatch.actions.endpoints import ActionsConfig
from trajwatch.analysis.evaluate import evaluate
from trajwatch.cli import actions as actions_cli
from trajwatch.cli import breaker as breaker_cli
from trajwatch.cli.times import parse_since
from trajwatch.config import actions_config, defaults_toml, detector_set, load_config
from trajwatch.service.listen import port
from trajwatch.service.replay import SKIP_REASON, ReplaySummary, replay
from trajwatch.settings import Settings

EXIT_USER = 2
"""Exit code of a user mistake (argparse's own, for usage errors)."""
EXIT_FAILURE = 1
"""Exit code of a failure that is not the user's (infrastructure, bugs)."""
SHOW_DEAD_LETTERS = 3
"""Dead letters a human-mode ``replay`` shows; ``trajwatch dead-letters`` lists them all."""
SHOW_SKIPPED = 10
"""Skipped files a human-mode ``replay`` names."""

_FLAGS = {
    "db_url": ("db", "--db"),
    "lateness_ms": ("lateness_ms", "--lateness-ms"),
    "session_attribute": ("session_attribute", "--session-attribute"),
    "inbound_dir": ("inbound_dir", "--inbound-dir"),
    "grpc_port": ("grpc_port", "--grpc-port"),
}
"""Settings field → (argparse dest, flag) of the flags that override settings."""


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake raised as a :class:`ConfigError` (one line, exit 2,
    like every other user mistake) instead of printed with the usage and exited."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message}; see `{self.prog} --help`")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trajwatch", description=__doc__.split("\n\n")[0])
    debug = "show the traceback of an error"
    parser.add_argument("--debug", action="store_true", help=debug)
    # The same flag after the command; SUPPRESS keeps it from resetting the one before.
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    rp = sub.add_parser("replay", parents=[common], help="run recorded files through the pipeline")
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
    wk = sub.add_parser(
        "worker", parents=[common], help="consume spans and events from Kafka (run N of them)"
    )
    wk.add_argument(
        "--bootstrap-servers", help="Kafka brokers, HOST:PORT[,...] (default: localhost:9092)"
    )
    wk.add_argument("--group", help="consumer group id (default: trajwatch)")
    wk.add_argument("--db", help="store URL; PostgreSQL when more than one worker runs")
    wk.add_argument(
        "--config", type=Path, help="TOML config (default: ./trajwatch.toml if present)"
    )
    wk.add_argument(
        "--stage",
        choices=["all", "ingest", "detect"],
        default="all",
        help="ingest: decode and order into the repartition topic; detect: sequence, "
        "judge and store; all (default): both",
    )
    wk.add_argument("--lateness-ms", type=int, help="event-time lateness for ordering")
    rp.add_argument(
        "--deliver",
        action="store_true",
        help="send the actions the alerts fire (a replay only reports them otherwise)",
    )
    ev = sub.add_parser("eval", parents=[common], help="score the detectors against labels")
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
    dl = sub.add_parser(
        "dead-letters", parents=[common], help="list what could not be read, and why"
    )
    dl.add_argument("--db", help="store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)")
    dl.add_argument("--json", action="store_true", help="print exactly one JSON object")
    dl.add_argument("--limit", type=_positive, default=20, help="newest N (default 20)")
    dl.add_argument("--summary", action="store_true", help="also count them by reason")
    al = sub.add_parser("alerts", parents=[common], help="list stored alerts")
    al.add_argument("--db", help="store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)")
    al.add_argument("--session", help="only this session's alerts")
    al.add_argument("--since", help="raised at or after: an ISO time, or 90m / 6h / 2d ago")
    al.add_argument("--json", action="store_true", help='print {"alerts": [...]}')
    ss = sub.add_parser("sessions", parents=[common], help="list sessions with their state")
    ss.add_argument("--db", help="store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)")
    ss.add_argument("--json", action="store_true", help='print {"sessions": [...]}')
    sp = sub.add_parser(
        "serve",
        parents=[common],
        help="run the live service (OTLP/HTTP and gRPC receivers + pipeline)",
    )
    sp.add_argument("--db", help="store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)")
    sp.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    sp.add_argument("--port", type=port, default=4318, help="port (default: 4318, OTLP/HTTP's)")
    sp.add_argument(
        "--grpc-port",
        type=_port_or_off,
        help="OTLP/gRPC port, or off (default: $TRAJWATCH_GRPC_PORT or 4317)",
    )
    sp.add_argument(
        "--config", type=Path, help="TOML config (default: ./trajwatch.toml if present)"
    )
    sp.add_argument(
        "--inbound-dir",
        help="write-ahead log folder (default: $TRAJWATCH_INBOUND_DIR or ./trajwatch-inbound)",
    )
    bn = sub.add_parser(
        "bench", parents=[common], help="measure serve, replay, latency and memory (minutes)"
    )
    bn.add_argument("--json", action="store_true", help="print the report as one JSON object")
    bn.add_argument("--quick", action="store_true", help="small sizes: seconds, not minutes")
    bn.add_argument(
        "--stages",
        action="store_true",
        help="only the replay's CPU by stage beside the stage budget (a minute)",
    )
    bn.add_argument(
        "--config", type=Path, help="TOML config (default: ./trajwatch.toml if present)"
    )
    breaker_cli.add_parser(sub, common, _positive)
    ui = sub.add_parser("ui", parents=[common], help="the explorer: a Streamlit app on the store")
    ui.add_argument("--db", help="store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)")
    ui.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    ui.add_argument("--port", type=port, default=8501, help="port (default: 8501)")
    ui.add_argument(
        "--config", type=Path, help="TOML config (default: ./trajwatch.toml if present)"
    )
    sub.add_parser("schema", parents=[common], help="print the session-event JSON Schema")
    sub.add_parser(
        "defaults", parents=[common], help="print every detector parameter and its default"
    )
    mp = sub.add_parser("migrate", parents=[common], help="upgrade the store's schema")
    mp.add_argument("--db", help="store URL")
    pp = sub.add_parser(
        "policy", parents=[common], help="show the policy derived from instructions, as TOML"
    )
    pp.add_argument(
        "--from-instructions",
        type=Path,
        required=True,
        metavar="FILE",
        help="a system prompt, AGENTS.md or CLAUDE.md",
    )
    pp.add_argument("--id", help="the policy id (default: derived-<file stem>)")
    _actions_parsers(sub, common)
    return parser


def _actions_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    db = "store URL (default: $TRAJWATCH_DB_URL or sqlite:///trajwatch.db)"
    config = "TOML config (default: ./trajwatch.toml if present)"
    dv = sub.add_parser("deliveries", parents=[common], help="the webhook outbox")
    dsub = dv.add_subparsers(dest="deliveries_command", required=True, parser_class=_Parser)
    ls = dsub.add_parser("list", parents=[common], help="list deliveries, newest first")
    ls.add_argument("--db", help=db)
    ls.add_argument("--status", choices=DELIVERY_STATUSES, help="only this status")
    ls.add_argument("--limit", type=_positive, default=50, help="newest N (default 50)")
    ls.add_argument("--json", action="store_true", help='print {"deliveries": [...], ...}')
    rd = dsub.add_parser("redeliver", parents=[common], help="send deliveries again")
    rd.add_argument("ids", nargs="*", help="delivery ids (webhook-id) to resend")
    rd.add_argument("--dead", action="store_true", help="resend every dead delivery")
    rd.add_argument("--db", help=db)
    en = dsub.add_parser("enable", parents=[common], help="re-enable an endpoint a 410 disabled")
    en.add_argument("endpoint", help="the endpoint's name")
    en.add_argument("--db", help=db)
    dp = sub.add_parser("dispatch", parents=[common], help="send the outbox until stopped")
    dp.add_argument("--db", help=db)
    dp.add_argument("--config", type=Path, help=config)
    dp.add_argument("--until-idle", action="store_true", help="exit once nothing is left to send")
    ac = sub.add_parser("actions", parents=[common], help="the action policy")
    asub = ac.add_subparsers(dest="actions_command", required=True, parser_class=_Parser)
    bt = asub.add_parser(
        "backtest", parents=[common], help="what a policy would have fired on stored alerts"
    )
    bt.add_argument("--since", required=True, help="an ISO time, or 90m / 6h / 2d / 1w ago")
    bt.add_argument("--config", type=Path, help="the candidate policy's config (" + config + ")")
    bt.add_argument("--db", help=db)
    bt.add_argument("--json", action="store_true", help="print exactly one JSON object")


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _port_or_off(text: str) -> int:
    """A port number, or ``off`` (0): ``--grpc-port``."""
    if text.strip().lower() == "off":
        return 0
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port (0-65535) or off, got {text!r}")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (0, :data:`EXIT_USER` or :data:`EXIT_FAILURE`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    flags: dict[str, str] = {}
    try:
        args = _parser().parse_args(argv)
        flags = _given_flags(args)
        return _run(args, flags)
    except StoreOpenError as exc:
        origin = Settings.origin("db_url", flags=flags)
        where = f"{origin} {exc.url}" if origin.startswith("--") else f"{origin}: {exc.url}"
        return _fail(f"{exc} ({where})", EXIT_USER, argv)
    except UserError as exc:
        return _fail(str(exc), EXIT_USER, argv)
    except OSError as exc:
        if exc.filename is None:
            return _fail(f"{exc}; check the system (--debug shows where)", EXIT_FAILURE, argv)
        # A file trajwatch was pointed at (or walked into) cannot be read: the user's to fix.
        return _fail(
            f"cannot read {exc.filename}: {exc.strerror}; check the path and its permissions",
            EXIT_USER,
            argv,
        )
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc
        return _fail(
            f"the store failed: {_first_line(str(cause))}; check the database and retry "
            "(--debug shows the traceback)",
            EXIT_FAILURE,
            argv,
        )
    except KeyboardInterrupt:
        return _fail("interrupted", 130, argv)
    except Exception as exc:
        return _fail(
            f"unexpected {type(exc).__name__}: {_first_line(str(exc))}; this is a bug: "
            "rerun with --debug and report the traceback",
            EXIT_FAILURE,
            argv,
        )


def _fail(message: str, code: int, argv: Sequence[str]) -> int:
    """Print ``message`` as one line on stderr (the traceback before it with ``--debug``)."""
    if "--debug" in argv:
        traceback.print_exc(file=sys.stderr)
    one_line = re.sub(r"\s*\n\s*", " ", message.strip())
    print(f"trajwatch: error: {one_line}", file=sys.stderr)
    return code


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no detail"


def _given_flags(args: argparse.Namespace) -> dict[str, str]:
    """Settings field → flag, for each settings flag the user passed."""
    return {
        name: flag for name, (dest, flag) in _FLAGS.items() if getattr(args, dest, None) is not None
    }


def _settings(args: argparse.Namespace, flags: dict[str, str]) -> Settings:
    overrides = {name: getattr(args, dest) for name, (dest, _) in _FLAGS.items() if name in flags}
    return Settings.from_env(flags=flags, **overrides)


def _run(args: argparse.Namespace, flags: dict[str, str]) -> int:
    if args.command == "schema":
        print(json.dumps(schema(), indent=2))
        return 0
    if args.command == "defaults":
        print(defaults_toml(), end="")
        return 0
    if args.command == "policy":
        return _policy(args.from_instructions, args.id)
    settings = _settings(args, flags)
    if args.command == "migrate":
        Store.open(settings.db_url).close()
        print(f"store at {shown(settings.db_url)} is at the current schema")
        return 0
    if args.command == "dead-letters":
        return _dead_letters(args, settings, flags)
    if args.command in ("alerts", "sessions"):
        return _list(args, settings, flags)
    if args.command == "serve":
        from trajwatch.service.serve import serve  # uvicorn and starlette load only for serve

        return serve(
            settings,
            _detectors(args, settings),
            host=args.host,
            port=args.port,
            actions=_actions_config(args, settings),
            grpc_port=settings.grpc_port,
        )
    if args.command == "bench":
        return _bench(args, settings)
    if args.command == "breaker":
        return breaker_cli.run(args, settings)
    if args.command == "ui":
        from trajwatch.cli.ui import run_ui  # streamlit loads only in its own process

        return run_ui(settings.db_url, _config_path(args, settings), host=args.host, port=args.port)
    if args.command == "eval":
        return _eval(args, settings)
    if args.command == "worker":
        return _worker(args, settings)
    if args.command in ("deliveries", "dispatch", "actions"):
        return actions_cli.run(args, settings, _existing_store(settings, flags), _config_path)
    return _replay(args, settings)


def _replay(args: argparse.Namespace, settings: Settings) -> int:
    detectors = _detectors(args, settings)
    actions = _actions_config(args, settings)
    if args.deliver and not actions.endpoints:
        raise ConfigError(
            "--deliver needs a webhook endpoint; set TRAJWATCH_WEBHOOK_URL and "
            "TRAJWATCH_WEBHOOK_SECRET, or add [webhooks.NAME] to the config"
        )
    progress = None
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(desc="replay", unit="recording", file=sys.stderr)
        progress = bar.update
    try:
        summary = replay(
            args.paths,
            settings=settings,
            detectors=detectors,
            progress=progress,
            actions_config=actions,
            deliver=args.deliver,
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


def _actions_config(args: argparse.Namespace, settings: Settings) -> ActionsConfig:
    return actions_config(load_config(_config_path(args, settings)), settings)


def _bench(args: argparse.Namespace, settings: Settings) -> int:
    from trajwatch.cli.extras import require_extra

    require_extra("opentelemetry.sdk", extra="fixtures", command="bench")  # its spans
    from trajwatch.bench.run import Sizes, format_report, run_bench

    if args.stages:  # the attributed replay alone, beside benchmarks/stage_budget.toml
        from trajwatch.bench.attribution import main as attribution

        config = _config_path(args, settings)
        options = ["--config", str(config)] if config else []
        attribution([*options, *(["--json"] if args.json else []), "--runs", "200"])
        return 0
    sizes = Sizes.quick() if args.quick else Sizes.full()
    progress = (lambda _: None) if args.json else (lambda m: print(f"… {m}", file=sys.stderr))
    report = run_bench(sizes, config_path=_config_path(args, settings), progress=progress)
    if args.json:
        print(json.dumps(report))
    else:
        print(format_report(report, "trajwatch bench" + (" --quick" if args.quick else "")))
    return 0


def _detectors(args: argparse.Namespace, settings: Settings) -> DetectorSet:
    return detector_set(load_config(_config_path(args, settings)))


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    import logging

    from trajwatch.cli.extras import require_extra

    require_extra("kafka", extra="kafka", command="worker")
    from trajwatch.service.cpu_placement import place
    from trajwatch.service.worker import kafka_options, run_worker

    place(settings.cpu, single=False)  # first: the threads started below inherit it
    logging.basicConfig(level=logging.INFO, format="trajwatch worker: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)  # the client's chatter
    config = load_config(_config_path(args, settings))
    options = kafka_options(config, bootstrap_servers=args.bootstrap_servers, group_id=args.group)
    actions = actions_config(config, settings)
    sinks: list[Sink] = []
    dispatcher = None
    if actions.endpoints and args.stage in ("all", "detect"):
        from trajwatch.actions import start as start_actions

        sink, dispatcher = start_actions(settings.db_url, actions)
        sinks.append(sink)
    try:
        stats = run_worker(
            settings=settings,
            options=options,
            detectors=detector_set(config),
            stage=args.stage,
            sinks=sinks,
        )
    finally:
        if dispatcher is not None:  # the worker has stopped committing: its actions too
            dispatcher.stop()
    print(
        f"worker stopped: {stats.read} messages read, {stats.sequenced} steps sequenced, "
        f"{stats.alerts} alerts, {stats.failures} failures survived"
    )
    return 0


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    config = load_config(_config_path(args, settings))
    result = evaluate(
        args.paths,
        labels_file=args.labels,
        settings=settings,
        detectors=detector_set(config),
        policy=actions_config(config, settings).policy,
    )
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(f"{result.sessions} sessions replayed, {result.labelled} labelled")
        print(result.table())
    return 0


def _existing_store(settings: Settings, flags: dict[str, str]) -> Store:
    """The store to read from; a SQLite file that does not exist is an error, not an empty
    store created on the spot (a typo would look like success)."""
    path = sqlite_file(settings.db_url)
    if path is not None and not path.exists():
        origin = Settings.origin("db_url", flags=flags)
        raise ConfigError(
            f"there is no store at {path} ({origin}); replay recordings into it first, "
            "or name an existing store with --db"
        )
    return Store.open(settings.db_url)


def _list(args: argparse.Namespace, settings: Settings, flags: dict[str, str]) -> int:
    store = _existing_store(settings, flags)
    try:
        if args.command == "alerts":
            since = None
            if args.since:
                since = parse_since(args.since, now=dt.datetime.now(dt.UTC))
            found = listing.alerts(store, session=args.session, since_ns=since)
            out = (
                json.dumps(listing.alerts_json(found)) if args.json else listing.alerts_text(found)
            )
        else:
            activity = listing.sessions(store)
            stops = listing.stopped(store.outbox().list())
            out = (
                json.dumps(listing.sessions_json(activity, stops))
                if args.json
                else listing.sessions_text(activity, stops)
            )
    finally:
        store.close()
    print(out)
    return 0


def _dead_letters(args: argparse.Namespace, settings: Settings, flags: dict[str, str]) -> int:
    with _existing_store(settings, flags) as store:
        total = store.count("dead_letters")
        letters = store.dead_letters(limit=args.limit)
        reasons = store.dead_letter_reasons() if args.summary else []
    if args.json:
        out: dict[str, object] = {
            "total": total,
            "dead_letters": [_dead_letter_json(d) for d in letters],
        }
        if args.summary:
            out["reasons"] = [{"reason": redact(r), "count": n} for r, n in reasons]
        print(json.dumps(out))
        return 0
    print(_dead_letters_human(letters, total, reasons, shown(settings.db_url)))
    return 0


def _dead_letter_json(letter: DeadLetter) -> dict[str, object]:
    """A dead letter as listed: where it came from and why; the payload only by size
    (it is the unredacted input)."""
    return {
        "source": letter.source,
        "location": redact(letter.location),
        "reason": redact(letter.reason),
        "content_type": letter.content_type,
        "payload_bytes": len(letter.payload),
    }


def _dead_letters_human(
    letters: Sequence[DeadLetter], total: int, reasons: Sequence[tuple[str, int]], db: str
) -> str:
    if not total:
        return f"no dead letters in {db}"
    lines = [f"{total} dead letters in {db}, newest first (showing {len(letters)}):"]
    lines += [f"  {_where(d)}  {redact(d.reason)}" for d in letters]
    if reasons:
        lines.append("by reason:")
        lines += [f"  {n:>6}  {redact(reason)}" for reason, n in reasons]
    return "\n".join(lines)


def _where(letter: DeadLetter) -> str:
    """``source:location``, unless the location already names its source (``kafka:...``)."""
    location = redact(letter.location)
    if location.startswith(f"{letter.source}:"):
        return location
    return f"{letter.source}:{location}" if letter.source else location


def _human(summary: ReplaySummary, db_url: str) -> str:
    lines = [
        f"replayed {summary.files} files into {shown(db_url)}",
        f"  sessions      {len(summary.sessions)}",
        f"  steps         {summary.steps} ({summary.new_steps} new; "
        f"{summary.duplicates} duplicate deliveries dropped)",
        f"  dead letters  {summary.dead_letters}",
    ]
    for letter in summary.first_dead_letters[:SHOW_DEAD_LETTERS]:
        lines.append(f"    {_where(letter)}  {redact(letter.reason)}")
    if summary.dead_letters > SHOW_DEAD_LETTERS:
        lines.append(
            f"    ... {summary.dead_letters - SHOW_DEAD_LETTERS} more: "
            f"trajwatch dead-letters --db {shown(db_url)}"
        )
    lines.append(f"  alerts        {len(summary.alerts)}")
    for alert in summary.alerts:
        lines.append(
            f"    [{alert.severity}] {alert.detector} session={alert.session_id} "
            f"onset=step {alert.onset_seq} score={alert.score:.2f} action={alert.action}: "
            f"{alert.reason}"
        )
    fired = Counter(str(d.action) for d in summary.would_fire if d.mode == "enforce")
    shadow = sum(d.mode == "shadow" for d in summary.would_fire)
    what = ", ".join(f"{name} {n}" for name, n in sorted(fired.items())) or "none"
    if summary.delivery_statuses:
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(summary.delivery_statuses.items()))
        lines.append(
            f"  actions       {what}; {summary.queued} webhooks queued by this replay; "
            f"deliveries: {statuses} (trajwatch deliveries list)"
        )
    else:
        lines.append(
            f"  would fire    {what}"
            + (f" (+{shadow} in shadow mode)" if shadow else "")
            + "; --deliver sends them"
        )
    if summary.skipped:
        lines.append(f"  skipped       {len(summary.skipped)} files ({SKIP_REASON}):")
        lines += [f"    {path}" for path in summary.skipped[:SHOW_SKIPPED]]
        if len(summary.skipped) > SHOW_SKIPPED:
            lines.append(f"    ... {len(summary.skipped) - SHOW_SKIPPED} more (--json lists all)")
    return "\n".join(lines)


def _policy(path: Path, policy_id: str | None) -> int:
    """``trajwatch policy --from-instructions FILE``: the policy its sentences state, as
    TOML to check and attach (what a session with these instructions is checked against
    when no policy file is attached), and the sentences that could not be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"instructions file {path} is not UTF-8 text; save it as UTF-8") from exc
    derivation = derive(redact(text))  # what is shown derives from redacted text
    pid = policy_id or f"derived-{path.stem.lower()}"
    Policy.from_mapping(pid, derivation.mapping(pid))  # what is printed must load
    print(to_toml(derivation, pid), end="")
    print(
        f"# {len(derivation.rules)} rules from {path}; {derivation.descriptive} sentences "
        "state no rule. Unconfirmed, these rules only warn; attach the file as a policy "
        "([policies] paths) to confirm them."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
