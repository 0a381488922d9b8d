"""The command line as a new user meets it: each mistake is one line and exit code 2,
``--debug`` adds the traceback, and what could not be read is shown with its reason.

Most cases run in-process through ``trajwatch.cli.main.main``; a few run
``python -m trajwatch.cli.main``
as a real subprocess, so what is asserted is what a terminal shows."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from models.errors import ConfigError, InputError, StoreOpenError, TrajwatchError, UserError
from tests.support.paths import ROOT
from tests.support.ports import free_port
from trajwatch.cli.main import main
from trajwatch.config import load_config

PG = "postgresql+psycopg://{user}@127.0.0.1:{port}/{db}"
T0 = 1_767_000_000  # Unix seconds, as session events carry them


def events(session: str) -> list[dict[str, object]]:
    return [
        {"type": "session_start", "session_id": session, "seq": 0, "ts": T0, "goal": "fix it"},
        {
            "type": "tool_call",
            "session_id": session,
            "seq": 1,
            "ts": T0 + 1,
            "tool": "read_file",
            "call_id": "c1",
            "arguments": {"path": "a.py"},
        },
    ]


def recording(folder: Path, session: str = "cli-1", bad_line: bool = False) -> Path:
    """A session log of ``session``; with ``bad_line``, its second line is not JSON."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(e) for e in events(session)]
    if bad_line:
        lines.insert(1, '{"type": "tool_call", "session_id": ')
    path = folder / f"{session}.events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    """The single stderr line of a handled mistake (asserted to be exactly one)."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("trajwatch: error: ")
    return lines[0].removeprefix("trajwatch: error: ")


# --- the store URL ------------------------------------------------------------------------

STORE_MISTAKES: dict[str, tuple[Callable[[Path], str], list[str]]] = {
    "malformed": (lambda _: "sqlite//no-colon.db", ["cannot read the store URL", "sqlite:///"]),
    "unknown dialect": (lambda _: "mysql://root@localhost/tw", ["unsupported database 'mysql'"]),
    "unknown driver": (
        lambda _: "postgresql+nodriver://u@localhost/tw",
        ["unknown database driver 'postgresql+nodriver'"],
    ),
    "driver not installed": (
        lambda _: "postgresql+pg8000://u@localhost/tw",
        ["'pg8000'", "not installed", "postgresql+psycopg://"],
    ),
    "missing sqlite folder": (
        lambda tmp: f"sqlite:///{tmp}/no/such/dir/tw.db",
        ["folder", "no/such/dir does not exist", "mkdir -p"],
    ),
    "not a sqlite file": (
        lambda tmp: f"sqlite:///{tmp / 'cli-1.events.jsonl'}",
        ["is not a SQLite database"],
    ),
    "unreachable server": (
        lambda _: PG.format(user="postgres", port=free_port(), db="test"),
        ["cannot connect to PostgreSQL at 127.0.0.1:", "connection refused", "server running"],
    ),
}


@pytest.mark.parametrize("case", sorted(STORE_MISTAKES))
def test_store_url_mistakes_are_one_line_naming_the_flag(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_url, expected = STORE_MISTAKES[case]
    path = recording(tmp_path)
    url = make_url(tmp_path)
    code, out, err = run(capsys, "replay", str(path), "--db", url)
    assert code == 2 and out == ""
    line = one_error_line(err)
    for text in expected:
        assert text in line
    assert line.endswith(")") and "(--db " in line  # names what the user actually used
    assert ";" in line  # what is wrong; what to do


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("user", "db", "expected"),
    [
        ("trajwatch_no_such_role", "test", 'role "trajwatch_no_such_role" does not exist'),
        ("postgres", "trajwatch_no_such_db", 'database "trajwatch_no_such_db" does not exist'),
    ],
)
def test_the_real_server_refusing_a_login_is_one_line(
    user: str, db: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = PG.format(user=user, port=5432, db=db)
    code, _, err = run(capsys, "replay", str(recording(tmp_path)), "--db", url)
    line = one_error_line(err)
    assert code == 2
    assert line.startswith("PostgreSQL at 127.0.0.1:5432 refused the connection: " + expected)


def test_a_password_in_the_url_is_never_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql+psycopg://me:hunter2secret@127.0.0.1:{free_port()}/test"
    code, _, err = run(capsys, "replay", str(recording(tmp_path)), "--db", url)
    assert code == 2 and "hunter2secret" not in err and "me:***@" in err


def test_the_url_from_the_environment_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAJWATCH_DB_URL", f"sqlite:///{tmp_path}/missing/tw.db")
    code, _, err = run(capsys, "replay", str(recording(tmp_path)))
    assert code == 2
    assert "(TRAJWATCH_DB_URL: sqlite:///" in one_error_line(err)


# --- settings, config and detector parameters --------------------------------------------


def test_a_bad_flag_value_names_the_flag_not_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path}/tw.db"
    path = str(recording(tmp_path))
    code, _, err = run(capsys, "replay", path, "--db", db, "--lateness-ms", "-5")
    line = one_error_line(err)
    assert code == 2 and line.startswith("--lateness-ms must be >= 0, got -5")
    assert "TRAJWATCH_LATENESS_MS" not in line
    monkeypatch.setenv("TRAJWATCH_LATENESS_MS", "-7")
    code, _, err = run(capsys, "replay", path, "--db", db)
    assert code == 2 and one_error_line(err).startswith("TRAJWATCH_LATENESS_MS must be >= 0")
    monkeypatch.setenv("TRAJWATCH_LATENESS_MS", "soon")
    code, _, err = run(capsys, "replay", path, "--db", db)
    assert code == 2 and "TRAJWATCH_LATENESS_MS='soon' is not an integer" in one_error_line(err)


def config_case(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[str, str]:
    config = tmp_path / "tw.toml"
    config.write_text(text)
    db = f"sqlite:///{tmp_path}/tw.db"
    code, _, err = run(
        capsys, "replay", str(recording(tmp_path)), "--db", db, "--config", str(config)
    )
    assert code == 2
    return one_error_line(err), str(config)


def test_a_mistyped_detector_parameter_lists_the_valid_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from detectors.registry import REGISTRY, load_builtin, parameters

    load_builtin()
    line, config = config_case(tmp_path, capsys, "[detectors.runaway_loop]\nwindw = 30\n")
    assert line.startswith(f"unknown parameter `windw` for detector `runaway_loop` in {config}")
    assert "__init__" not in line and "keyword argument" not in line
    valid = line.split("; valid: ", 1)[1]
    for name in parameters(REGISTRY["runaway_loop"]):
        assert name in valid
    assert valid.endswith("(did you mean `window`?)")


def test_an_unknown_detector_is_named_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, config = config_case(tmp_path, capsys, "[detectors.runaway_lop]\nwindow = 30\n")
    assert line.startswith(f"unknown detector `runaway_lop` in {config}; known: ")
    assert "runaway_loop" in line and line.endswith("(did you mean `runaway_loop`?)")


def test_a_parameter_of_the_wrong_type_or_range_names_detector_and_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, config = config_case(tmp_path, capsys, '[detectors.runaway_loop]\nwindow = "forty"\n')
    assert line == (
        f"parameter `window` of detector `runaway_loop` in {config} must be an integer, got 'forty'"
    )
    line, config = config_case(tmp_path, capsys, "[detectors.runaway_loop]\nenabled = 1\n")
    assert "`enabled` of detector `runaway_loop`" in line and "true or false" in line


def test_a_toml_syntax_error_names_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, config = config_case(tmp_path, capsys, "[detectors.runaway_loop]\nwindow = 3\n[oops\n")
    assert line.startswith(f"config file {config}, line 3, column 6: invalid TOML: ")
    with pytest.raises(ConfigError, match=r"b.toml, line 1, column 7: invalid TOML"):
        load_config(_write(tmp_path / "b.toml", "a = 1 2\n"))


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_missing_config_or_path_and_a_usage_mistake_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path}/tw.db"
    path = str(recording(tmp_path))
    code, _, err = run(capsys, "replay", path, "--db", db, "--config", str(tmp_path / "no.toml"))
    assert code == 2 and "no.toml does not exist" in one_error_line(err)
    code, _, err = run(capsys, "replay", str(tmp_path / "nope"), "--db", db)
    assert code == 2 and "nope: no such file or folder" in one_error_line(err)
    code, _, err = run(capsys, "replay")
    assert code == 2 and "paths" in one_error_line(err) and "--help" in err
    code, _, err = run(capsys, "replay", path, "--lateness-ms", "soon")
    assert code == 2 and "--lateness-ms" in one_error_line(err)


# --- labels and eval ----------------------------------------------------------------------

LABEL_MISTAKES = {
    "missing": (None, "does not exist"),
    "extra cells": ("run_id,session_id,failure,onset_call_id\nr,s,none,,,x\n", "line 2"),
    "unknown format": ("x,y\n1,2\n", "unknown format (columns: x, y)"),
    "empty": ("", "unknown format (columns: none)"),
    "header only": ("run_id,session_id,failure,onset_call_id\n", "has no rows"),
    "not text": (b"\xff\xfe\x00\x01binary", "is not CSV text"),
    "bad line number": (
        "file,line_no,derived_attacker_target_in_tool_args\nrun.jsonl,two,1\n",
        "line 2: line_no 'two' is not a number",
    ),
}


@pytest.mark.parametrize("case", sorted(LABEL_MISTAKES))
def test_labels_file_mistakes_are_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, expected = LABEL_MISTAKES[case]
    labels = tmp_path / "labels.csv"
    if isinstance(content, bytes):
        labels.write_bytes(content)
    elif content is not None:
        labels.write_text(content)
    path = str(recording(tmp_path / "rec"))
    code, out, err = run(capsys, "eval", path, "--labels", str(labels))
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert line.startswith(f"labels file {labels}") and expected in line


def test_eval_with_labels_matching_no_session_is_an_error_naming_both_sides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "run_id,session_id,failure,onset_call_id,onset_span_id\n"
        "r1,other-run-1,runaway_loop,c1,\nr2,other-run-2,none,,\n"
    )
    path = str(recording(tmp_path / "rec", session="replayed-7"))
    code, out, err = run(capsys, "eval", path, "--labels", str(labels))
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert "none of the 2 sessions labelled" in line
    assert "'other-run-1'" in line and "'replayed-7'" in line


# --- what could not be read ---------------------------------------------------------------


def test_replay_names_dead_letter_reasons_and_skipped_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    recording(folder, bad_line=True)
    (folder / "notes.txt").write_text("not a recording")
    db = f"sqlite:///{tmp_path}/tw.db"
    code, out, err = run(capsys, "replay", str(folder), "--db", db)
    assert code == 0 and err == ""
    assert "dead letters  1" in out
    assert f"file:{folder / 'cli-1.events.jsonl'}:2  invalid JSON" in out
    assert str(folder / "notes.txt") in out and "unknown format" in out

    code, out, _ = run(capsys, "replay", str(folder), "--db", db, "--json")
    result = json.loads(out)
    assert code == 0 and out.count("\n") == 1
    assert {"sessions", "steps", "dead_letters", "alerts"} <= set(result)
    assert result["dead_letters"] == 1 and result["sessions"] == 1
    assert result["skipped"] == [
        {"path": str(folder / "notes.txt"), "reason": "unknown format: not a recording by its name"}
    ]
    (reason,) = result["dead_letter_reasons"]
    assert reason["location"] == f"{folder / 'cli-1.events.jsonl'}:2"
    assert reason["reason"].startswith("invalid JSON")


def test_dead_letters_lists_reasons_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path}/tw.db"
    first = recording(tmp_path / "a", session="cli-a", bad_line=True)
    second = recording(tmp_path / "b", session="cli-b", bad_line=True)
    assert main(["replay", str(first), "--db", db]) == 0
    assert main(["replay", str(second), "--db", db]) == 0
    capsys.readouterr()

    code, out, _ = run(capsys, "dead-letters", "--db", db, "--json", "--summary")
    assert code == 0 and out.count("\n") == 1
    listed = json.loads(out)
    assert listed["total"] == 2
    assert [d["location"] for d in listed["dead_letters"]] == [f"{second}:2", f"{first}:2"]
    assert all(
        d["reason"].startswith("invalid JSON") and d["source"] for d in listed["dead_letters"]
    )
    assert listed["reasons"][0]["count"] == 2  # the same reason twice

    code, out, _ = run(capsys, "dead-letters", "--db", db, "--limit", "1")
    assert code == 0
    assert out.splitlines()[0].startswith("2 dead letters in ")
    assert f"{second}:2  invalid JSON" in out and str(first) not in out


def test_dead_letters_of_a_store_that_does_not_exist_is_a_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "dead-letters", "--db", f"sqlite:///{tmp_path}/typo.db")
    assert code == 2 and "there is no store at" in one_error_line(err)
    assert not (tmp_path / "typo.db").exists()  # and looking did not create one


# --- failures that are not the user's, and --debug ---------------------------------------


def test_a_broken_store_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db_file = tmp_path / "tw.db"
    assert main(["replay", str(recording(tmp_path)), "--db", f"sqlite:///{db_file}"]) == 0
    with sqlite3.connect(db_file) as connection:  # damage it behind trajwatch's back
        connection.execute("DROP TABLE dead_letters")
    capsys.readouterr()
    code, _, err = run(capsys, "dead-letters", "--db", f"sqlite:///{db_file}")
    assert code == 1
    assert one_error_line(err).startswith("the store failed: no such table: dead_letters")
    code, _, err = run(capsys, "--debug", "dead-letters", "--db", f"sqlite:///{db_file}")
    assert code == 1 and "Traceback" in err and err.splitlines()[-1].startswith("trajwatch: ")


def test_debug_shows_the_traceback_before_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path}/no/dir/tw.db"
    for argv in (["--debug", "replay"], ["replay", "--debug"]):
        code, _, err = run(capsys, *argv, str(recording(tmp_path)), "--db", db)
        assert code == 2
        assert err.startswith("Traceback") and "StoreOpenError" in err
        assert err.splitlines()[-1].startswith("trajwatch: error: cannot create the SQLite store")


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRAJWATCH_DB_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "trajwatch.cli.main", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.slow  # the trajwatch command as a process
def test_as_a_real_process(tmp_path: Path) -> None:
    path = str(recording(tmp_path))
    refused = PG.format(user="postgres", port=free_port(), db="test")
    done = cli("replay", path, "--db", refused, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "connection refused" in one_error_line(done.stderr)

    # Two processes only (each costs a second of imports); the other cases run in-process.
    done = cli("--debug", "eval", path, "--labels", str(tmp_path / "labels.csv"), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("Traceback (most recent call last)")
    assert "FileNotFoundError" in done.stderr and "InputError" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("trajwatch: error: labels file ")


def test_the_hierarchy_has_one_root_for_user_mistakes() -> None:
    for cls in (ConfigError, InputError, StoreOpenError):
        assert issubclass(cls, UserError) and issubclass(cls, TrajwatchError)


def test_the_license_is_the_apache_license_the_package_declares() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert 'license = "Apache-2.0"' in (ROOT / "pyproject.toml").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "9. Accepting Warranty" in text
