"""The SSRF guard: what a webhook URL names, whether trajwatch may connect there, and the
only addresses it then connects to.

A signed webhook carries trajwatch's authority (a breaker acts on it) and trajwatch's
place in the network, so it must go only where the operator meant. Two ways it went
elsewhere, and how this module closes them:

- *Two readers of one URL.* The guard read ``http://127.0.0.1:9000\\@8.8.8.8/hook`` as host
  8.8.8.8 (``urlsplit`` takes the backslash as part of a userinfo) while the HTTP client
  read it as host 127.0.0.1 (a backslash ends the authority, as browsers do), and
  delivered the kill to a loopback listener. Now there is one reader, :func:`parse`, and
  it is strict: only ``http``/``https``, no userinfo, no backslash, no control character,
  no space, no fragment, no percent-encoded or non-ASCII host, no IPv6 zone, no numeric
  host that is not a canonical dotted quad (``127.1``, ``0x7f.0.0.1``, ``2130706433``),
  a port from 1 to 65535. A URL any two parsers could read differently is refused rather
  than interpreted. The client never sees the URL string: it gets the :class:`Target`.
- *Two resolutions of one name.* The guard resolved the name, then the client resolved it
  again: a DNS answer that changed in between (rebinding) passed the guard with a public
  address and connected to a private one. Now :func:`pin` resolves once, judges every
  address it got, and the client (:mod:`trajwatch.actions.transport`) connects only to
  those addresses, sending the original host name as ``Host`` and, for https, as the
  TLS server name the certificate is verified against.

What is refused (:class:`AddressPolicy`):

- always, even with ``allow_private``: cloud metadata and the address space it lives in —
  IPv4 link-local ``169.254.0.0/16`` (AWS, GCP, Azure, OCI, DigitalOcean metadata at
  169.254.169.254, ECS at 169.254.170.2), IPv6 link-local ``fe80::/10``, AWS's IPv6
  metadata ``fd00:ec2::/32`` (fd00:ec2::254), the shared address space ``100.64.0.0/10``
  (Alibaba Cloud's metadata at 100.100.100.200, carrier-grade NAT), Azure's host address
  168.63.129.16, the unspecified addresses (``0.0.0.0/8``, ``::``: connecting to 0.0.0.0
  reaches the local host) — and the metadata host names (``metadata.google.internal``,
  ...), whatever they resolve to;
- unless ``allow_private``: loopback, private (RFC 1918, ``fc00::/7``), multicast,
  reserved and documentation ranges — everything Python's :mod:`ipaddress` does not call
  public;
- an address inside IPv6 that carries an IPv4 one (IPv4-mapped ``::ffff:a.b.c.d``, NAT64
  ``64:ff9b::/96``, 6to4, Teredo) is judged as that IPv4 address too.

An address in ``allow_addresses`` (exact addresses, ``TRAJWATCH_WEBHOOK_ALLOW_ADDRESSES``
or ``[actions] allow_addresses``) is allowed whatever its class: the narrow way to send to
one breaker on loopback, or to a metadata-range address an operator really means.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from models.errors import ConfigError, DestinationRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolved = tuple[socket.AddressFamily, tuple[Any, ...]]
"""One address to connect to: the socket family and the ``sockaddr`` to pass to
``socket.connect`` (as ``getaddrinfo`` gives them)."""
Resolver = Callable[[str, int], Sequence[Resolved]]
"""The DNS seam: ``(host, port)`` → every address the name has; raises ``OSError``
(``socket.gaierror``) when it has none. :func:`system_resolver` by default; tests pass a
rebinding one."""

ALWAYS_REFUSED: tuple[tuple[str, str], ...] = (
    ("169.254.0.0/16", "link-local, where cloud metadata lives (169.254.169.254)"),
    ("fe80::/10", "IPv6 link-local"),
    ("fd00:ec2::/32", "AWS's IPv6 metadata range (fd00:ec2::254)"),
    ("100.64.0.0/10", "shared address space, where cloud metadata lives (100.100.100.200)"),
    ("168.63.129.16/32", "Azure's host address (metadata and wire server)"),
    ("0.0.0.0/8", "unspecified (0.0.0.0 reaches the local host)"),
    ("::/128", "unspecified"),
)
"""Ranges refused even with ``allow_private``: nothing a webhook should reach lives there."""
_ALWAYS = tuple((ipaddress.ip_network(net), why) for net, why in ALWAYS_REFUSED)

METADATA_NAMES = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
"""Host names of cloud metadata services, refused by name whatever they resolve to."""

_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_URL = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)"
    r"(?P<path>[^?#]*)(?:\?(?P<query>[^#]*))?(?P<fragment>#.*)?",
    re.DOTALL,
)
"""RFC 3986's own split (appendix B), the one reading of a URL."""
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
_TARGET_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*")
"""Path and query: RFC 3986's unreserved, sub-delims, ``:@/%`` (and ``?`` in the query)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Target:
    """A webhook URL as :func:`parse` read it: all the HTTP client is given."""

    scheme: str
    """``http`` or ``https``."""
    host: str
    """Lower-case host name, or an IP address without brackets."""
    port: int
    request_target: str
    """Path and query, as sent in the request line (``/`` when the URL has no path)."""
    address: IPAddress | None = None
    """The host as an IP address when it is one (no DNS then)."""

    @property
    def host_header(self) -> str:
        """The ``Host`` header: the host (IPv6 in brackets) and a port that is not the
        scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = DEFAULT_PORTS[self.scheme]
        return host if self.port == default else f"{host}:{self.port}"


def parse(url: str) -> Target:
    """The one reading of a webhook URL, or :class:`DestinationRefused` saying what in it
    is ambiguous or not allowed.

    >>> parse("https://Breaker.example.com/v1/hook?x=1")
    Target(scheme='https', host='breaker.example.com', port=443, request_target='/v1/hook?x=1', address=None)
    >>> parse("http://[::1]:4319").host_header
    '[::1]:4319'
    >>> parse("http://127.0.0.1:9000\\\\@8.8.8.8/hook")
    Traceback (most recent call last):
    ...
    models.errors.DestinationRefused: the webhook URL holds a backslash, which HTTP clients read differently; write the URL without one
    """  # noqa: E501
    if any(c <= " " or c == "\x7f" for c in url):
        raise DestinationRefused(
            "the webhook URL holds a space or a control character; write it without one"
        )
    if not url.isascii():
        raise DestinationRefused(
            "the webhook URL holds non-ASCII characters; percent-encode the path and give "
            "the host in its ASCII (punycode) form"
        )
    if "\\" in url:
        raise DestinationRefused(
            "the webhook URL holds a backslash, which HTTP clients read differently; "
            "write the URL without one"
        )
    found = _URL.fullmatch(url)
    if found is None:
        raise DestinationRefused(
            "the webhook URL is not of the form http(s)://host[:port]/path; write it so"
        )
    scheme = found["scheme"].lower()
    if scheme not in DEFAULT_PORTS:
        raise DestinationRefused(f"only http and https destinations are sent to, not {scheme}")
    if found["fragment"] is not None:
        raise DestinationRefused("the webhook URL has a #fragment; remove it")
    authority = found["authority"]
    if "@" in authority:
        raise DestinationRefused(
            "the webhook URL holds a userinfo (user:password@); credentials in a URL are "
            "refused: the signature authenticates trajwatch"
        )
    host, port = _host_port(authority, DEFAULT_PORTS[scheme])
    path, query = found["path"], found["query"]
    if path and not path.startswith("/"):
        raise DestinationRefused("the webhook URL's path must start with /")
    if not _TARGET_CHARS.fullmatch(path) or (
        query is not None and not _TARGET_CHARS.fullmatch(query.replace("?", ""))
    ):
        raise DestinationRefused(
            "the webhook URL's path or query holds characters URLs must percent-encode; "
            "encode them"
        )
    target = (path or "/") + (f"?{query}" if query is not None else "")
    address = _literal(host)
    return Target(scheme, host, port, target, address)


def _host_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):
        inside, bracket, rest = authority[1:].partition("]")
        if not bracket or "%" in inside:
            raise DestinationRefused(
                "the webhook URL's IPv6 host is malformed or has a zone (%); write [address]"
            )
        try:
            host = str(ipaddress.IPv6Address(inside))
        except ValueError:
            raise DestinationRefused(
                f"the webhook URL's host [{inside}] is not an IPv6 address"
            ) from None
        if rest and not rest.startswith(":"):
            raise DestinationRefused("the webhook URL has text after its IPv6 host; remove it")
        port_text = rest[1:] if rest else None
    else:
        host, colon, port_text_or_empty = authority.partition(":")
        port_text = port_text_or_empty if colon else None
        host = host.lower()
        if not host:
            raise DestinationRefused("the webhook URL names no host")
        if not _NAME.fullmatch(host) or len(host) > 253:
            raise DestinationRefused(
                f"the webhook URL's host {host!r} is not a host name or an IPv4 address "
                "(letters, digits, - and . only)"
            )
        last = host.rstrip(".").rsplit(".", 1)[-1]
        if _NUMERIC_LABEL.fullmatch(last) and _v4(host) is None:
            raise DestinationRefused(
                f"the webhook URL's host {host!r} is numeric but not a dotted quad "
                "(a.b.c.d); resolvers read such hosts differently; write the address in full"
            )
    if port_text is None:
        return host, default
    if not port_text.isdigit() or len(port_text) > 5 or not 1 <= int(port_text) <= 65535:
        raise DestinationRefused(
            f"the webhook URL's port {port_text!r} is not a number from 1 to 65535"
        )
    return host, int(port_text)


def _v4(host: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(host)
    except ValueError:
        return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class AddressPolicy:
    """Which addresses a webhook may connect to (the module's docstring has the list)."""

    allow_private: bool = False
    allow_addresses: frozenset[IPAddress] = field(default_factory=frozenset)

    def judge(self, address: IPAddress) -> str | None:
        """Why ``address`` is refused (None: allowed).

        >>> policy = AddressPolicy(allow_private=True)
        >>> policy.judge(ipaddress.ip_address("100.100.100.200"))
        'shared address space, where cloud metadata lives (100.100.100.200), refused even with allow_private'
        >>> policy.judge(ipaddress.ip_address("::ffff:169.254.169.254")).split(",")[0]
        'link-local'
        >>> AddressPolicy().judge(ipaddress.ip_address("10.0.0.7"))
        'private'
        >>> AddressPolicy().judge(ipaddress.ip_address("8.8.8.8")) is None
        True
        """  # noqa: E501
        if address in self.allow_addresses:
            return None
        judged = _judged(address)
        for seen in judged:
            for network, why in _ALWAYS:
                if seen.version == network.version and seen in network:
                    return f"{why}, refused even with allow_private"
        if self.allow_private:
            return None
        for seen in judged:
            kind = _inward(seen)
            if kind is not None:
                return kind
        return None


def _judged(address: IPAddress) -> list[IPAddress]:
    """What to judge for ``address``: the IPv4 addresses an IPv6 one carries (NAT64,
    6to4, Teredo) first, then itself — an IPv4-mapped address is only its IPv4 one."""
    if not isinstance(address, ipaddress.IPv6Address):
        return [address]
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    found: list[IPAddress] = []
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if any(address in net for net in _NAT64):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [*found, address]


def _inward(address: IPAddress) -> str | None:
    for kind, test in (
        ("loopback", address.is_loopback),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if test:
            return kind
    return None if address.is_global else "not public"


def system_resolver(host: str, port: int) -> list[Resolved]:
    """Every TCP address of ``host`` from the system's resolver (``getaddrinfo``)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [(family, sockaddr) for family, _, _, _, sockaddr in infos]


@dataclass(frozen=True, slots=True)
class Pinned:
    """A :class:`Target` and the addresses the guard judged for it: the only ones the
    client may connect to, tried in order."""

    target: Target
    addresses: tuple[Resolved, ...]


def pin(url: str, policy: AddressPolicy, resolver: Resolver = system_resolver) -> Pinned:
    """Parse ``url``, resolve its host once and judge every address.

    Raises :class:`DestinationRefused` when the URL or any address is refused (a name
    with one inward answer is refused whole: which answer a client would use is not
    ours to bet on), and ``OSError`` when the name does not resolve (a failed attempt,
    retried: DNS comes back).

    >>> pin("http://8.8.8.8:81/hook", AddressPolicy()).addresses
    ((<AddressFamily.AF_INET: 2>, ('8.8.8.8', 81)),)
    >>> pin("http://127.0.0.1:9/hook", AddressPolicy())
    Traceback (most recent call last):
    ...
    models.errors.DestinationRefused: destination 127.0.0.1 is loopback; to send there, allow private destinations (TRAJWATCH_WEBHOOK_ALLOW_PRIVATE=1) or name the exact address in TRAJWATCH_WEBHOOK_ALLOW_ADDRESSES
    >>> metadata = ipaddress.ip_address("169.254.169.254")
    >>> pin("http://169.254.169.254/latest", AddressPolicy(allow_private=True))
    Traceback (most recent call last):
    ...
    models.errors.DestinationRefused: destination 169.254.169.254 is link-local, where cloud metadata lives (169.254.169.254), refused even with allow_private; to send there, name the exact address in TRAJWATCH_WEBHOOK_ALLOW_ADDRESSES
    >>> pin("http://169.254.169.254/latest", AddressPolicy(allow_addresses=frozenset({metadata}))
    ...     ).target.host
    '169.254.169.254'
    """  # noqa: E501
    target = parse(url)
    if target.host.rstrip(".") in METADATA_NAMES:
        raise DestinationRefused(
            f"destination {target.host} is a cloud metadata service, refused whatever it "
            "resolves to"
        )
    if target.address is not None:
        family = socket.AF_INET6 if target.address.version == 6 else socket.AF_INET
        sockaddr: tuple[Any, ...] = (str(target.address), target.port)
        if family == socket.AF_INET6:
            sockaddr = (*sockaddr, 0, 0)
        resolved: Sequence[Resolved] = [(family, sockaddr)]
    else:
        resolved = resolver(target.host, target.port)
        if not resolved:
            raise socket.gaierror(f"{target.host} has no address")
    for _, sockaddr in resolved:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        why = policy.judge(address)
        if why is not None:
            what = (
                f"destination {address} is {why}"
                if target.address is not None
                else f"destination {target.host} resolves to {address}: {why}"
            )
            private_would = AddressPolicy(allow_private=True).judge(address) is None
            raise DestinationRefused(
                f"{what}; to send there, "
                + ("allow private destinations (TRAJWATCH_WEBHOOK_ALLOW_PRIVATE=1) or "
                   if private_would else "")
                + "name the exact address in TRAJWATCH_WEBHOOK_ALLOW_ADDRESSES"
            )
    return Pinned(target, tuple(resolved))


def addresses(texts: Iterable[str], *, where: str) -> frozenset[IPAddress]:
    """Exact IP addresses from text (an allow list); a ConfigError naming ``where`` for one
    that is not an address (a network is not: the list is exact)."""
    found = set()
    for text in texts:
        try:
            found.add(ipaddress.ip_address(text.strip()))
        except ValueError:
            raise ConfigError(
                f"{where}: {text!r} is not an IP address; the allow list takes exact "
                "addresses (no networks, no names)"
            ) from None
    return frozenset(found)
