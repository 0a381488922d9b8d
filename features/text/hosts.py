"""URL and host parsing: the host an address points at, and host-list membership.

Contract: pure string functions (no DNS, no I/O). A host is returned lower-case, without
port, userinfo, brackets or trailing dot, IDNA-encoded when not ASCII; an IP literal in
its canonical form. Anything that is not a contactable host gives None.

Decisions
---------
- Version strings (``1.2.3``), ``python3.11`` and file paths are never hosts: a bare host
  needs a dotted name with a letter TLD, ``localhost``, or an IP literal; callers that
  expect a host (ssh/scp/nc operands) may also accept single-label names (``bastion``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from features.text.memo import short_text_memo

__all__ = ["SCP_LIKE_RE", "clean_host", "host_in", "host_of", "network_address"]

_LABEL_RE = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
# ``[user@]host:path`` (scp, and git's scp-like remotes); ``host`` may be ``[IPv6]``
SCP_LIKE_RE = re.compile(
    r"^(?:(?P<user>[^@/\s:]+)@)?(?P<host>\[[0-9a-fA-F:.]+\]|[^@/\s:\[\]]+):(?!//)"
)


def clean_host(raw: str, *, single_label: bool = False) -> str | None:
    """``raw`` as a contactable host name or IP literal, lower-case, or None.

    Memoised for short text (bounded): a run names a handful of hosts again and again,
    and a name costs ~16 µs uncached (``ipaddress`` raises twice telling it from an IP
    literal), ~0.2 µs cached.
    """
    return _clean_host(raw, single_label)


# longer text is no host but for surrounding space: not worth a memo entry
@short_text_memo(entries=4096, max_chars=300)
def _clean_host(raw: str, single_label: bool) -> str | None:
    host = raw.strip().strip("[]").rstrip(".").lower()
    if not host or len(host) > 253:
        return None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    labels = host.split(".")
    if not all(_LABEL_RE.fullmatch(label) for label in labels):
        return None
    if len(labels) == 1:
        return host if (single_label or host == "localhost") and not host.isdigit() else None
    tld = labels[-1]
    if not any(c.isalpha() for c in tld) or tld.isdigit():
        return None  # 1.2.3, python3.11, 10.0.0 are not host names
    return host


def host_of(url: str, *, bare: bool = False, single_label: bool = False) -> str | None:
    """The host a URL or address points at, or None.

    Understands ``scheme://[user[:pw]@]host[:port]/…`` (IPv6 in brackets) and scp-like
    ``user@host:path``. With ``bare=True`` it also takes ``host``, ``host:port``,
    ``host/path`` and ``user@host`` (callers pass it where a host is expected);
    ``single_label`` accepts names without a dot (``bastion``). ``file:`` and other
    host-less URLs give None.

    >>> host_of("https://User:pw@API.Example.COM.:8443/v1?q=1")
    'api.example.com'
    >>> host_of("git@github.com:org/repo.git"), host_of("http://[::1]:8080/x")
    ('github.com', '::1')
    >>> host_of("example.com/path"), host_of("example.com/path", bare=True)
    (None, 'example.com')
    """
    text = url.strip()
    if not text:
        return None
    if "://" in text:
        try:
            parts = urlsplit(text)
            host = parts.hostname
        except ValueError:
            return None
        return clean_host(host, single_label=True) if host else None
    m = SCP_LIKE_RE.match(text)
    if m and (m.group("user") or bare):
        candidate = m.group("host")
        return clean_host(candidate, single_label=single_label or bool(m.group("user")))
    if not bare:
        return None
    host = text.split("/", 1)[0].rsplit("@", 1)[-1]
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    elif host.count(":") == 1:
        host, _, port = host.partition(":")
        if not port.isdigit():
            return None
    return clean_host(host, single_label=single_label)


def host_in(host: str, entries: Iterable[str]) -> bool:
    """``host`` is one of ``entries`` or a subdomain of one (``*.`` prefixes allowed)."""
    for entry in entries:
        entry = entry.lower().removeprefix("*.")
        if host == entry or host.endswith("." + entry):
            return True
    return False


def network_address(word: str) -> bool:
    """Whether ``word`` is an IP address or network, with an optional port (``10.0.0.5``,
    ``10.0.0.0/24``, ``[::1]:8080``, ``10.0.0.5:22``): the name of a host in digits, not
    a quantity.

    >>> [network_address(w) for w in ("10.0.0.5", "10.0.0.0/24", "1.5", "10.0.0.5:22")]
    [True, True, False, True]
    """
    if len(word) > _MAX_ADDRESS or not (":" in word or word.count(".") == 3):
        return False
    host, colon, port = word.rpartition(":")
    if colon and port.isdigit() and (host.count(".") == 3 or host.startswith("[")):
        word = host.strip("[]")
    try:
        ipaddress.ip_interface(word)
    except ValueError:
        return False
    return True


_MAX_ADDRESS = 64
"""Characters of the longest address with a prefix or port worth parsing."""
