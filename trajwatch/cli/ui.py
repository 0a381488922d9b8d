"""``trajwatch ui``: the explorer (``dashboards/app.py``) served by Streamlit.

The app reads the store the other commands use (``--db``, else ``$TRAJWATCH_DB_URL``)
and the same config (``--config``, else ``$TRAJWATCH_CONFIG``, else ``./trajwatch.toml``);
both reach it through those environment variables, the one way the settings are read.
The command becomes Streamlit's server (``exec``): its server owns the main thread and the
signals, and stopping ``trajwatch ui`` stops it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from models.errors import ConfigError
from models.open_errors import sqlite_file
from trajwatch.cli.extras import require_extra
from trajwatch.service.listen import ensure_free


def app_path() -> Path:
    """Where ``dashboards/app.py`` is: beside this package in a checkout, or the installed
    ``dashboards`` package."""
    here = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"
    if here.exists():
        return here
    spec = importlib.util.find_spec("dashboards")
    if spec is None or spec.origin is None:
        raise ConfigError(
            "the explorer's app (dashboards/app.py) is not installed; reinstall trajwatch"
        )
    return Path(spec.origin).parent / "app.py"


def command(*, host: str, port: int) -> list[str]:
    """The ``streamlit run`` command line for the explorer on ``host:port``."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        # a viewer's toolbar: no "Deploy" button (it offers to publish the app to
        # Streamlit's cloud) and no developer menu; the explorer is a tool, not a draft
        "--client.toolbarMode",
        "viewer",
    ]


def environment(db_url: str, config: Path | None, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the store URL, the config and the checkout on the import path."""
    env = dict(base)
    env["TRAJWATCH_DB_URL"] = db_url
    if config is not None:
        env["TRAJWATCH_CONFIG"] = str(config.resolve())
    root = str(app_path().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def run_ui(db_url: str, config: Path | None, *, host: str, port: int) -> int:
    """Serve the explorer until interrupted; a SQLite store that does not exist is an
    error here (one line) rather than a page saying so."""
    require_extra("streamlit", extra="ui", command="ui")
    path = sqlite_file(db_url)
    if path is not None and not Path(path).exists():
        raise ConfigError(
            f"there is no store at {path}; replay recordings into it first, or name an "
            "existing store with --db"
        )
    if config is not None and not config.exists():
        raise ConfigError(f"config file {config} does not exist; fix --config or $TRAJWATCH_CONFIG")
    ensure_free(host, port, command="ui")  # Streamlit's own refusal is a log line and exit 1
    print(f"trajwatch explorer on http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
    # The process becomes Streamlit's server: SIGTERM and Ctrl-C reach it directly, and
    # stopping `trajwatch ui` cannot leave an orphaned server behind.
    os.execve(
        sys.executable, command(host=host, port=port), environment(db_url, config, os.environ)
    )
