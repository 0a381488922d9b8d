"""Fast paths that must give exactly what the plain regex gives (performance work,
issue 12): checked against the plain form on random text built from the characters
the patterns care about, and on the fixtures' kind of text."""

from __future__ import annotations

import random

from features.calls.canonical import _VOLATILE_RE, _replace, _volatile_sub
from features.calls.vectors import _PATH_RE, _URL_RE, _path_matches

_ALPHABET = "ab/._-@~:+ (\t\n\u00a0\u2003x9Z0\\[]\"'éTmpe,d"
_WORDS = [
    "2024-05-01",
    "10:00:00Z",
    "tmp",
    "/tmp/x",
    "/dev/shm",
    "/var/folders/ab/cd/T",
    "pytest-of-ci/pytest-7",
    "tmpab12cd34",
    "call_Ab12cd34",
    "9fceb02d0ae5",
    "abcdefab-abcd-abcd-abcd-abcdefabcdef",
    "10.0.0.1",
    "1,20p",
    "C:\\Users\\me\\AppData\\Local\\Temp",
    "src/a.py",
    "plain",
    "word",
    "",
    "-n",
    "x=1",
]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            out.append("".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(40))))
        else:
            out.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randrange(12))))
    return out


def test_path_matches_are_the_pattern_s() -> None:
    for text in _texts(1, 20_000):
        assert list(_path_matches(text)) == [m.group(0) for m in _PATH_RE.finditer(text)]


def test_url_prefilter_never_skips_a_url() -> None:
    for text in _texts(2, 20_000):
        if "://" not in text and "@" not in text:
            assert _URL_RE.search(text) is None


def test_volatile_sub_is_the_pattern_s() -> None:
    for text in _texts(3, 20_000):
        assert _volatile_sub(text) == _VOLATILE_RE.sub(_replace, text), text


def test_sensitive_file_prefilter_never_skips_a_match() -> None:
    from features.egress.sensitive import _FILE_LITERALS, _FILE_RE

    pieces = [
        "~/.aws/credentials",
        "/home/u/.ssh/id_ed25519",
        ".gnupg/x",
        ".kube/config",
        ".docker/config.json",
        ".config/gcloud/a.json",
        ".azure/t",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".pgpass",
        ".git-credentials",
        ".vault-token",
        ".env",
        ".env.local",
        "id_rsa.pub",
        "credentials.json",
        "secrets.yaml",
        "/etc/shadow",
        "cat",
        "offset",
        "set",
        "/",
        ".",
        "a",
    ]
    rng = random.Random(4)
    for _ in range(20_000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randrange(6)))
        text = "".join(c for c in text if rng.random() > 0.05)  # broken pieces too
        if not any(a in text for a in _FILE_LITERALS):
            assert _FILE_RE.search(text) is None, text


def _plain_waits_for_human(tool: str, args: object) -> bool:
    """``features.calls.waits.waits_for_human`` as it read a call before its fast path:
    every call without a command parsed as its sorted JSON (first 8,000 characters)."""
    import json
    from collections.abc import Mapping

    from features.calls.tool_view import DEFAULT_APPROVAL_RE, parsed_view

    if tool and DEFAULT_APPROVAL_RE.search(tool):
        return True
    if isinstance(args, Mapping):
        if args.get("with_escalated_permissions") is True:
            return True
        if args.get("sandbox_permissions") == "require_escalated":
            return True
        if tool and not isinstance(args.get("command"), str | list):
            return parsed_view(tool, json.dumps(args, sort_keys=True)[:8000]).approval_request
    return False


def test_waits_for_human_skips_the_parse_only_where_it_finds_no_request() -> None:
    from features.calls.waits import waits_for_human

    rng = random.Random(7)
    keys = ["question", "Reason", "ACTION", "path", "query", "url", "content", "n", "x"]
    values = [
        "may I push to main?",
        "please approve the deploy",
        "Can I delete the branch",
        "read the file",
        "src/a.py",
        "x" * 9_000,  # past the 8,000 characters read: the view reads a cut text
        "ok to go ahead",
        3,
        None,
        ["a", "permission"],
    ]
    asked = 0
    for _ in range(3_000):
        args = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 8))}
        tool = rng.choice(["web_fetch", "notify", "read_file", "write_file", "ask"])
        expected = _plain_waits_for_human(tool, args)
        asked += expected
        assert waits_for_human(tool, args) == expected, (tool, args)
    assert 0 < asked < 3_000  # both answers were exercised
