"""The actions' commands: ``deliveries list|redeliver|enable``, ``dispatch`` and
``actions backtest`` (wired into :mod:`trajwatch.cli.main`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from features.redact.engine import redact
from models.errors import ConfigError
from models.records import Delivery
from models.store import Store
from trajwatch.actions.backtest import decide, report, to_text
from trajwatch.actions.dispatcher import Dispatcher
from trajwatch.actions.operations import enable, redeliver
from trajwatch.cli.times import parse_since
from trajwatch.config import actions_config, load_config
from trajwatch.listing import alerts
from trajwatch.service.logs import log_to_stderr
from trajwatch.settings import Settings

ConfigPath = Callable[[argparse.Namespace, Settings], Path | None]


def run(args: argparse.Namespace, settings: Settings, store: Store, config_path: ConfigPath) -> int:
    try:
        if args.command == "dispatch":
            return _dispatch(args, settings, config_path)
        if args.command == "actions":
            return _backtest(args, settings, store, config_path)
        if args.deliveries_command == "list":
            return _list(args, store)
        if args.deliveries_command == "enable":
            count = enable(store, args.endpoint)
            print(f"endpoint {args.endpoint} enabled; {count} held deliveries due again")
            return 0
        return _redeliver(args, store)
    finally:
        store.close()


def delivery_json(d: Delivery) -> dict[str, Any]:
    return {
        "id": d.delivery_id,
        "alert_id": d.alert_id,
        "endpoint": d.endpoint,
        "action": str(d.action),
        "mode": d.mode,
        "status": d.status,
        "session_id": d.session_id,
        "agent": d.agent,
        "attempts": d.attempts,
        "last_status_code": d.last_status_code,
        "last_error": d.last_error,
        "decision": d.decision,
        "next_attempt_at": _iso(d.next_attempt_at) if d.status == "pending" else None,
        "created": _iso(d.created),
        "updated": _iso(d.updated),
    }


def _list(args: argparse.Namespace, store: Store) -> int:
    outbox = store.outbox()
    rows = outbox.list(args.status, args.limit)
    endpoints = outbox.endpoints()
    if args.json:
        print(
            json.dumps(
                {
                    "deliveries": [delivery_json(d) for d in rows],
                    "endpoints": [
                        {
                            "name": e.name,
                            "enabled": e.enabled,
                            "reason": e.reason,
                            "updated": _iso(e.updated),
                        }
                        for e in endpoints
                    ],
                }
            )
        )
        return 0
    lines = [
        f"endpoint {e.name} DISABLED: {redact(e.reason or '')} "
        f"(trajwatch deliveries enable {e.name})"
        for e in endpoints
        if not e.enabled
    ]
    if not rows:
        lines.append("no deliveries" + (f" with status {args.status}" if args.status else ""))
    for d in rows:
        why = f" {d.last_status_code or ''} {redact(d.last_error or '')}".rstrip()
        lines.append(
            f"{d.delivery_id}  {d.status:<10} {d.action:<8} {d.mode:<7} "
            f"attempts={d.attempts} session={d.session_id}{why}"
        )
    print("\n".join(lines))
    return 0


def _redeliver(args: argparse.Namespace, store: Store) -> int:
    count = redeliver(store, args.ids, dead=args.dead)
    print(f"{count} deliveries due again (same webhook-id); a running dispatcher sends them")
    return 0


def _dispatch(args: argparse.Namespace, settings: Settings, config_path: ConfigPath) -> int:
    config = actions_config(load_config(config_path(args, settings)), settings)
    if not config.endpoints:
        raise ConfigError(
            "no webhook endpoint is configured; set TRAJWATCH_WEBHOOK_URL and "
            "TRAJWATCH_WEBHOOK_SECRET, or add [webhooks.NAME] to the config"
        )
    log_to_stderr("dispatch")  # an undelivered kill is an ERROR line
    dispatcher = Dispatcher(settings.db_url, config).start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        while not stop.is_set():
            if args.until_idle and dispatcher.drain(0.5):
                break
            stop.wait(0.5)
    finally:
        dispatcher.stop()
    return 0


def _backtest(
    args: argparse.Namespace, settings: Settings, store: Store, config_path: ConfigPath
) -> int:
    since_ns = parse_since(args.since, now=dt.datetime.now(dt.UTC))
    config = actions_config(load_config(config_path(args, settings)), settings)
    decisions = decide(store, config.policy, alerts(store, since_ns=since_ns))
    reports = report(decisions)
    if args.json:
        print(
            json.dumps(
                {
                    "since": _iso(since_ns),
                    "alerts": len(decisions),
                    "agents": [r.to_json() for r in reports],
                    "decisions": [d.to_json() for d in decisions],
                }
            )
        )
    else:
        print(to_text(reports, _iso(since_ns) or args.since))
    return 0


def _iso(ns: int | None) -> str | None:
    if not ns:
        return None
    moment = dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
