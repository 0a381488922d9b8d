"""``serve``'s write-ahead log at rest, on a real ``serve`` on loopback: it kept raw
credentials on disk, world-readable (0644), for up to 8 MiB of later traffic. Now what it
holds is sealed, its folder 0700 and its files 0600, and it is emptied as soon as its
records are committed; a restart still feeds what it held, and refuses another key."""

from __future__ import annotations

import json
import stat
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
import requests

import trajwatch.service.serve
from ingest.sources.inbound_cipher import KEY_FILE
from ingest.sources.inbound_log import InboundLog
from models.errors import ConfigError
from models.store import Store
from tests.integration.serve.test_serve import CONFIG, Running, metric, service, settled
from tests.support.ports import free_port
from tests.support.wait import wait_until
from trajwatch.config import detector_set, load_config
from trajwatch.service.serve import Service
from trajwatch.settings import Settings

__all__ = ["service"]  # the fixture, imported from test_serve

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def span_doc(trace: str) -> dict[str, Any]:
    """One tool span whose arguments hold two credentials (OTLP/JSON)."""
    arguments = {"command": f"curl -H 'Authorization: token {GITHUB_TOKEN}' https://x.io"}
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "bash",
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.conversation.id": f"s-{trace}",
        "note": f"aws_secret_access_key = {AWS_SECRET}",
    }
    span = {
        "traceId": trace * 32,
        "spanId": "cd" * 8,
        "name": "execute_tool bash",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def on_disk(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in folder.iterdir() if path.is_file())


def send(base: str, trace: str) -> None:
    answer = requests.post(f"{base}/v1/traces", json=span_doc(trace), timeout=10)
    assert answer.status_code == 200, answer.text


def test_the_log_holds_no_credential_and_only_its_owner_can_read_it(
    service: Any, tmp_path: Path
) -> None:
    running = service(idle_flush_ms=600_000)  # the trace stays open: its record stays live
    send(running.base, "a")
    folder = tmp_path / "inbound"
    wait_until(lambda: metric(running.base, "trajwatch_inbound_records") == 1, 5, "the feed")
    data = on_disk(folder)
    assert data, "the record is in the log"
    for secret in (GITHUB_TOKEN, AWS_SECRET, "curl -H"):
        assert secret.encode() not in data
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    running.stop()


def test_the_log_is_emptied_as_soon_as_its_records_are_committed(
    service: Any, tmp_path: Path
) -> None:
    running = service()  # idle_flush_ms=300
    folder = tmp_path / "inbound"
    for trace in "abc":
        send(running.base, trace)
    first_key = (folder / KEY_FILE).read_bytes()
    wait_until(lambda: settled(running.base), 10, "the traces to be stored")
    wait_until(lambda: not list(folder.iterdir()), 5, "the log's files to go")
    send(running.base, "d")  # a new segment, sealed with a new key
    assert sorted(p.name for p in folder.iterdir()) == [f"{3:020d}.wal", KEY_FILE]
    assert (folder / KEY_FILE).read_bytes() != first_key
    running.stop()


def start(tmp_path: Path, **overrides: Any) -> Running:
    settings = Settings(
        db_url=f"sqlite:///{tmp_path / 'live.db'}",
        inbound_dir=str(tmp_path / "inbound"),
        **{"idle_flush_ms": 600_000, **overrides},
    )
    port = free_port()
    detectors = detector_set(load_config(CONFIG))
    return Running(Service(settings, detectors, host="127.0.0.1", port=port), port).start()


@pytest.mark.parametrize("key", [None, "an-inbound-key-of-32-characters!"])
def test_a_restart_feeds_what_the_log_held_and_refuses_another_key(
    tmp_path: Path, key: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trajwatch.service.serve, "RESUME_GRACE_S", 0.3)
    first = start(tmp_path, inbound_key=key)
    for trace in "ab":
        send(first.base, trace)
    first.stop()  # a drain: open traces stay in the log for the next start
    assert GITHUB_TOKEN.encode() not in on_disk(tmp_path / "inbound")
    with pytest.raises(ConfigError, match="another key"):
        Service(
            Settings(
                db_url=f"sqlite:///{tmp_path / 'other.db'}",
                inbound_dir=str(tmp_path / "inbound"),
                inbound_key="a-different-key-of-32-characters",
            ),
            detector_set(load_config(CONFIG)),
            host="127.0.0.1",
            port=free_port(),
        )
    second = start(tmp_path, inbound_key=key, idle_flush_ms=300)
    assert second.service.ingest.recovered == 2
    wait_until(lambda: settled(second.base), 15, "the resumed traces to be stored")
    second.stop()
    with Store.open(f"sqlite:///{tmp_path / 'live.db'}") as store:
        assert {s.session_id for s in store.sessions()} == {"s-a", "s-b"}


def test_a_plaintext_segment_from_before_is_read_then_goes(tmp_path: Path) -> None:
    """A log written by the previous version (plaintext frames, 0644) is fed at the next
    start, made private, and deleted once retired."""
    folder = tmp_path / "inbound"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    payload = b"\x0c\x00traces/proto" + b"body"
    frame = struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    old = folder / f"{0:020d}.wal"
    old.write_bytes(frame)
    old.chmod(0o644)
    log = InboundLog(folder)
    assert [(r.seq, r.kind, r.body) for r in log.recovered] == [(0, "traces/proto", b"body")]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    (seq,) = log.append([("traces/proto", b"new")])
    assert seq == 1
    log.retire([0, 1])
    log.close()
    assert list(folder.iterdir()) == []
