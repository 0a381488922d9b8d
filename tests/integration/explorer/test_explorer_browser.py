"""The explorer in a real browser: ``trajwatch ui`` served on loopback, the session page
of a fixture incident loaded in headless Chromium (the Debian package, driven by
Playwright with ``executable_path``: no browser download). The page must render its
timeline and the alert; a screenshot is kept as a test artefact (its path is printed).
A live session's page must refresh itself, with no reload, when its steps arrive."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from models.records import Severity
from tests.support.explorer_seed import CONFIG, RECORDED, Seeded, copy
from tests.support.paths import ROOT
from tests.support.ports import free_port

CHROMIUM = Path(os.environ.get("TRAJWATCH_CHROMIUM", "/usr/bin/chromium"))
ARTEFACTS = ROOT / "build" / "test-artefacts"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _serve(url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trajwatch.cli.main",
                "ui",
                "--db",
                url,
                "--port",
                str(port),
                "--config",
                str(CONFIG),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
        if process.poll() is not None:
            break
    process.kill()
    pytest.fail(f"trajwatch ui did not answer on port {port}:\n{log.read_text()[-2000:]}")


def test_the_session_page_of_an_incident_renders_in_chromium(
    explorer_store: Seeded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set "
            "TRAJWATCH_CHROMIUM), or deselect with -m 'not browser'",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    session = explorer_store.sessions["loop"]
    kill = next(
        a
        for a in explorer_store.alerts
        if a.session_id == session and a.severity == Severity.CRITICAL
    )
    port = free_port()
    server = _serve(explorer_store.url, port, tmp_path / "ui.log")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / "explorer-session.png"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(f"http://127.0.0.1:{port}/?session={session}&alert={kill.alert_id}")
            page.get_by_text(f"Session {session}", exact=True).wait_for(timeout=60_000)
            # the alert: its caption names the onset and its id
            page.get_by_text(kill.alert_id).first.wait_for(timeout=30_000)
            assert page.get_by_text(f"onset: step {kill.onset_seq}").count() >= 1
            charts = page.locator('[data-testid="stVegaLiteChart"]')
            charts.nth(3).wait_for(timeout=30_000)  # timeline, cumulative, egress, scores
            # the timeline is drawn: Vega's canvas or SVG has a size
            drawn = page.locator(
                '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'
            ).first
            drawn.wait_for(timeout=30_000)
            box = drawn.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 100
            assert page.get_by_text("the alert the link names").count() >= 1
            assert page.locator('[data-testid="stException"]').count() == 0
            page.wait_for_timeout(1000)  # let the charts finish drawing for the picture
            page.screenshot(path=str(shot), full_page=True)
            browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
            stopped = True
        except subprocess.TimeoutExpired:
            server.kill()
            stopped = False
    # `trajwatch ui` became the server: SIGTERM stops it, no orphan keeps the port
    assert stopped, "trajwatch ui did not stop on SIGTERM"
    assert shot.stat().st_size > 20_000
    with capsys.disabled():  # the artefact's path, whatever pytest's capture
        print(f"\nexplorer screenshot: {shot}")


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()


def test_a_live_sessions_page_refreshes_itself_in_chromium(
    explorer_store: Seeded, tmp_path: Path
) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium", pytrace=False)
    from playwright.sync_api import sync_playwright

    from tests.support.explorer_seed import LIVE_RUN, detectors
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    url = copy(explorer_store, tmp_path)
    live = explorer_store.sessions["live"]
    port = free_port()
    server = _serve(url, port, tmp_path / "ui.log")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.goto(f"http://127.0.0.1:{port}/?session={live}")
            page.get_by_text("This session is live: refreshing every").wait_for(timeout=60_000)
            steps = page.get_by_test_id("stMetricValue").first  # "Steps", the first metric
            steps.wait_for(timeout=30_000)
            before = int(steps.inner_text())
            # the rest of its log arrives while the page stays open: the session ends
            replay(
                [RECORDED / f"{LIVE_RUN}.events.jsonl.gz"],
                settings=Settings(db_url=url),
                detectors=detectors(),
            )
            deadline = time.monotonic() + 60
            while int(steps.inner_text() or 0) == before and time.monotonic() < deadline:
                page.wait_for_timeout(500)
            assert int(steps.inner_text()) > before  # refreshed by itself: no reload
            # ended: the page ran again whole, without the timer
            page.get_by_text("refreshing every").wait_for(state="detached", timeout=30_000)
            assert page.get_by_text("State:** live").count() == 0
            assert page.locator('[data-testid="stException"]').count() == 0
            browser.close()
    finally:
        _stop(server)


class _Pixel:
    """A loopback HTTP server that counts the requests it gets: an image URL an agent
    wrote into its name, which the operator's browser must never fetch."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.send_header("content-type", "image/gif")
                self.end_headers()
                self.wfile.write(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")

            def log_message(self, *args: object) -> None:
                pass

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/pixel"
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_markdown_the_agent_wrote_loads_nothing_in_chromium(tmp_path: Path) -> None:
    """An agent named ``![x](http://127.0.0.1:PORT/pixel)``: the session page shows the
    name as text, no image loads (the pixel server sees no request), no link renders."""
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium", pytrace=False)
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    from tests.support.explorer_seed import hostile

    pixel = _Pixel()
    store = hostile(tmp_path, pixel.url)
    port = free_port()
    server = _serve(store.url, port, tmp_path / "ui.log")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(f"http://127.0.0.1:{port}/?session={quote(store.session_id, safe='')}")
            page.get_by_text("Goal:").first.wait_for(timeout=60_000)
            page.wait_for_timeout(1500)  # time for an image to load, were there one
            assert pixel.hits == [], "the agent's image loaded in the operator's browser"
            assert page.locator(f'img[src*="{pixel.port}"]').count() == 0
            links = page.locator('a[href*="evil.example"], a[href^="mailto"]')
            assert links.count() == 0, links.first.evaluate("e => e.parentElement.outerHTML")
            # shown as the text it is (a word joiner, invisible, keeps "http://" unlinked)
            assert page.get_by_text("Session md-**s**-[s](http").count() == 1
            assert page.get_by_text("![x](http").count() >= 1
            assert page.get_by_text("[link](http").count() >= 1
            assert page.get_by_text(":red[red] $x^2$ <img src=").count() >= 1
            assert page.locator('[data-testid="stException"]').count() == 0
            browser.close()
    finally:
        _stop(server)
        pixel.stop()
    assert pixel.hits == []
