"""What the explorer says about stopping, and how it shows what the agent wrote.

- The watched agent is the adversary and writes its own goal, name and session id: the
  explorer shows them as text. An agent named ``![x](http://…/pixel)`` once loaded that
  image in the operator's browser; a goal's ``[link](http://evil)`` rendered as a link.
- A kill that reached no breaker is a red banner on every page, naming the session and
  the reason (it used to be visible only in ``trajwatch deliveries list``).
- A session a kill was delivered for is ``killed`` (it said ``success``, the agent's own
  word); the Alerts page does not say "No stopping action was decided" under kill rows
  when no webhook endpoint is configured.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dashboards.markdown import WORD_JOINER, escape
from models.store import Store
from tests.support.explorer_app import app, markdown_shown, no_exception
from tests.support.explorer_seed import RECORDED, Hostile, Seeded, detectors, hostile
from tests.support.ports import free_port
from trajwatch.actions import signing
from trajwatch.actions.endpoints import ActionsConfig, Endpoint, RetryPolicy
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

PAGES = ("sessions", "session", "alerts", "replay")


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return hostile(tmp_path_factory.mktemp("hostile"), "http://127.0.0.1:9/pixel")


def rendered_as_links_or_images(texts: list[str]) -> list[str]:
    """The Markdown sources that hold a link, an image, a directive, maths, a heading or
    raw HTML the agent wrote, unescaped (escaped characters are dropped before looking)."""
    needles = (
        "](http", "![x]", "[link]", ":red[red]", "<a href", "<img", "$x^2$", "# h1",
        "http://", "www.evil", "@evil",  # bare URLs and addresses: GFM autolinks them
    )
    unescaped = [re.sub(r"\\[!-/:-@\[-`{-~]", "", t) for t in texts]
    return [t for t in unescaped if any(n in t for n in needles)]


def test_agent_written_markdown_is_shown_as_text(
    monkeypatch: pytest.MonkeyPatch, hostile_store: Hostile
) -> None:
    h = hostile_store
    for page in PAGES:
        params = {"page": page} | ({"session": h.session_id} if page == "session" else {})
        at = app(monkeypatch, h.url, **params)
        no_exception(at)
        shown = markdown_shown(at)
        assert not rendered_as_links_or_images(shown), page
    at = app(monkeypatch, h.url, session=h.session_id)
    shown = "\n".join(markdown_shown(at))
    assert at.title[0].value == f"Session {escape(h.session_id)}"
    assert f"**Goal:** {escape(h.goal)}" in shown
    assert f"**Agent:** {escape(h.agent)}" in shown
    # a crafted link to the explorer: ?session= is shown as text too
    at = app(monkeypatch, h.url, session="[a](http://evil.example/q)")
    warning = at.warning[0].value
    assert escape("[a](http://evil.example/q)") in warning
    assert not rendered_as_links_or_images([warning])


def test_the_escape_renders_every_punctuation_as_itself() -> None:
    """Backslash before ASCII punctuation is CommonMark's literal; a line break would
    start a block (a heading, a list), so it becomes a space."""
    import string

    joined = {"@": WORD_JOINER}  # an e-mail address is autolinked after escapes: broken up
    assert escape(string.punctuation) == "".join(
        "\\" + c + joined.get(c, "") for c in string.punctuation
    )
    assert escape("a\nb\r\nc\u2028d") == "a b c d"
    assert escape("plain words 42") == "plain words 42"


def test_a_refused_kill_is_a_red_banner_on_every_page(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    loopback = f"http://127.0.0.1:{free_port()}/hook"  # refused: no allow_private
    actions = ActionsConfig(
        endpoints={"breaker": Endpoint("breaker", loopback, signing.signers(
            ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], where="test"))},
        retry=RetryPolicy(max_attempts=1, timeout_s=1, lease_s=10),
    )
    summary = replay(
        [RECORDED / "run-008-7aaac6.events.jsonl"],
        settings=Settings(db_url=url),
        detectors=detectors(),
        actions_config=actions,
        deliver=True,
        deliver_timeout_s=20,
    )
    assert summary.queued and summary.undelivered == 0
    with Store.open(url) as store:
        dead_kills = [d for d in store.outbox().list("dead") if str(d.action) == "kill"]
    assert dead_kills
    session = dead_kills[0].session_id or ""
    for page in PAGES:
        at = app(monkeypatch, url, page=page, session=session)
        no_exception(at)
        banner = at.error[0].value
        assert "not delivered" in banner and "not stopped" in banner, page
        assert f"**kill** of session {escape(session)} to breaker: refused" in banner
        assert escape("127.0.0.1 is loopback") in banner


def test_no_banner_while_every_stopping_action_was_delivered_or_none_fired(
    monkeypatch: pytest.MonkeyPatch, hostile_store: Hostile
) -> None:
    at = app(monkeypatch, hostile_store.url, page="alerts")
    no_exception(at)
    assert not at.error


def test_a_session_a_kill_was_delivered_for_is_killed(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    loop = explorer_store.sessions["loop"]  # its kill was delivered to "ops"
    at = app(monkeypatch, explorer_store.url)
    no_exception(at)
    frame = next(d.value for d in at.dataframe if "breaker" in d.value.columns)
    states = dict(zip(frame["session_id"], frame["state"], strict=True))
    assert states[loop] == "killed"
    assert states[explorer_store.sessions["live"]] == "live"
    assert states[explorer_store.sessions["healthy"]] not in ("killed", "live")
    at = app(monkeypatch, explorer_store.url, session=loop)
    assert any("**State:** killed" in m.value for m in at.markdown)


def test_kills_with_no_webhook_configured_are_decided_not_sent(
    monkeypatch: pytest.MonkeyPatch, hostile_store: Hostile
) -> None:
    at = app(monkeypatch, hostile_store.url, page="alerts")
    no_exception(at)
    assert not any("No stopping action" in c.value for c in at.caption)
    assert any("no webhook endpoint is configured" in w.value for w in at.warning)
    breakers = next(d.value for d in at.dataframe if "breaker" in d.value.columns)
    assert list(breakers["breaker"]) == ["kill not sent"]
