"""A store for the explorer's tests: a few fixture incidents replayed through the pipeline
with the repository's config, their actions written to the outbox by the action policy's
own functions (one endpoint enforcing, one agent in shadow mode), a delivery dead, an
endpoint disabled, and one session still live (its log cut before the end)."""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from models.records import Action, Alert
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.actions.backtest import decide
from trajwatch.actions.policy import ActionPolicy, AgentSettings
from trajwatch.actions.sink import outbox_rows
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

RECORDED = ROOT / "fixtures" / "recorded"
CONFIG = ROOT / "trajwatch.toml"
RUNS = {
    "loop": "run-007-55e226",  # patchpilot: npm install retried, warn then critical + kill
    "exfil": "run-008-7aaac6",  # forge-coder: paste-sink upload, kill (shadow mode)
    "decay": "run-006-529811",  # forge-coder: push without approval after a compaction
    "healthy": "run-029-981e59",  # forge-coder: inferred compaction, no alert
}
LIVE_RUN = "run-022-f2d2a0"
SHADOW_AGENT = "forge-coder"


@dataclass(frozen=True, slots=True)
class Seeded:
    url: str
    path: Path
    sessions: dict[str, str]
    """Name (``loop``, ``exfil``, ``decay``, ``healthy``, ``live``) → session id."""
    alerts: list[Alert]


def detectors():  # type: ignore[no-untyped-def]
    return detector_set(load_config(CONFIG))


def recording(run: str) -> list[Path]:
    return sorted(p for p in RECORDED.glob(f"{run}*") if p.is_file())


def seed(folder: Path) -> Seeded:
    path = folder / "explorer.db"
    url = f"sqlite:///{path}"
    inputs = [p for run in RUNS.values() for p in recording(run)]
    live = folder / "live" / f"{LIVE_RUN}.events.jsonl"
    live.parent.mkdir()
    lines = gzip.decompress((RECORDED / f"{LIVE_RUN}.events.jsonl.gz").read_bytes()).splitlines()
    live.write_bytes(b"\n".join(line for line in lines if b'"session_end"' not in line) + b"\n")
    summary = replay([*inputs, live], settings=Settings(db_url=url), detectors=detectors())
    assert summary.dead_letters == 0
    labels = {
        line.split(",")[0]: line.split(",")[1]
        for line in (RECORDED / "labels.csv").read_text().splitlines()[1:]
    }
    sessions = {name: labels[run] for name, run in RUNS.items()}
    sessions["live"] = json.loads(lines[0])["session_id"]
    with Store.open(url) as store:
        alerts = store.alerts()
        # the incidents' own stops go out as recommended (the operator confirmed every
        # detector's kills here): the explorer shows what was sent, whatever decided it
        policy = ActionPolicy(
            agents={SHADOW_AGENT: AgentSettings(shadow=True)}, corroborate=False
        )
        rows = outbox_rows(decide(store, policy, alerts), ["ops", "pager"], None)
        with store.unit() as unit:
            unit.add_deliveries(rows)
        outbox = store.outbox()
        loop = [a for a in alerts if a.session_id == sessions["loop"]]
        kill = next(a for a in loop if a.action == Action.KILL)
        warn = next(a for a in loop if a.action == Action.NOTIFY)
        outbox.record(f"{kill.alert_id}:ops:kill", status="delivered", now=1, status_code=200)
        outbox.record(f"{warn.alert_id}:ops:notify", status="dead", now=1, error="HTTP 500")
        outbox.disable_endpoint("pager", "410 Gone from the pager")
    return Seeded(url, path, sessions, alerts)


def copy(seeded: Seeded, folder: Path) -> str:
    """A copy of the seeded store (for a test that writes), its URL."""
    with Store.open(seeded.url, migrate=False) as store, store.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    target = folder / "copy.db"
    shutil.copy(seeded.path, target)
    return f"sqlite:///{target}"


@dataclass(frozen=True, slots=True)
class Hostile:
    """A store holding one session whose agent wrote Markdown into everything it names."""

    url: str
    session_id: str
    agent: str
    goal: str


def hostile(folder: Path, pixel_url: str) -> Hostile:
    """The exfiltration run (``run-008``, a kill) replayed under an agent named
    ``![x](PIXEL_URL)`` — an image that, rendered, loads ``pixel_url`` in the operator's
    browser — with a goal full of links, directives, HTML and maths and a session id
    holding Markdown too."""
    session_id = "md-**s**-[s](http://evil.example/s)"
    agent = f"![x]({pixel_url})"
    goal = (
        "[link](http://evil.example/a) <a href='http://evil.example/b'>b</a> "
        "http://evil.example/c www.evil.example me@evil.example :red[red] $x^2$ "
        "<img src='{pixel}'>\n# h1"
    ).replace("{pixel}", pixel_url)
    lines = (RECORDED / "run-008-7aaac6.events.jsonl").read_text().splitlines()
    events = []
    for line in lines:
        event = json.loads(line)
        event["session_id"] = session_id
        if event["type"] == "session_start":
            event.update(agent=agent, goal=goal)
        events.append(json.dumps(event))
    path = folder / "hostile.events.jsonl"
    path.write_text("\n".join(events) + "\n")
    url = f"sqlite:///{folder / 'hostile.db'}"
    summary = replay([path], settings=Settings(db_url=url), detectors=detectors())
    assert summary.dead_letters == 0 and summary.alerts
    return Hostile(url, session_id, agent, goal)
