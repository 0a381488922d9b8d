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
