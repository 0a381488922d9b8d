"""A scope of network targets: "only hosts in scope may be scanned or attacked" with the
task "audit 10.27.17.0/24", judged on the targets a call's scanner, connection or HTTP
client is pointed at.

- :func:`states_scope`: whether a sentence states such a scope (the word *scope*, or
  "only" with a verb of attacking: scan, attack, exploit, probe, pentest).
- :func:`named_scope`: what the scope allows: the IPv4 addresses and networks the
  instructions and the task name (anywhere in them: the rule and the range are often in
  different sentences), and the host names the scope sentence itself names. A scope the
  instructions only point to ("hosts listed in scope.txt") is not read: a file's text is
  data the agent reads, not instructions (that file's contents would have to be trusted
  as the rule).
- :func:`call_targets`: the targets of one call: IPv4 addresses, networks (``/24``) and
  nmap ranges (``10.0.0.1-40``) among the arguments of a network program (scanners,
  connection and HTTP clients: their CLI's names, :data:`SCANNERS`, :data:`CLIENTS`), host
  names only for scanners (a name given to ``curl`` is as often a download as a target),
  URLs' IP hosts anywhere in a non-shell call's arguments, and IP hosts the call's
  egress targets name.
- :func:`outside`: the targets not inside any allowed network or name (``ipaddress``
  containment: a network target must be a subnet of an allowed one). Loopback is always
  inside: it is the agent's own machine.

Pure; linear in the text (bounded regexes, at most :data:`MAX_CHARS` of a call).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from features.text.hosts import clean_host, host_of
from features.text.shell_words import simple_commands, strip_prefixes, tokenize

__all__ = [
    "CLIENTS",
    "SCANNERS",
    "argument_strings",
    "call_targets",
    "named_scope",
    "outside",
    "states_scope",
]

MAX_CHARS = 16_384
"""Characters of a call's argument strings examined."""

SCANNERS = frozenset(
    [
        "nmap",
        "masscan",
        "zmap",
        "rustscan",
        "naabu",
        "nikto",
        "sqlmap",
        "hydra",
        "medusa",
        "gobuster",
        "ffuf",
        "feroxbuster",
        "dirb",
        "dirsearch",
        "wfuzz",
        "whatweb",
        "wpscan",
        "nuclei",
        "enum4linux",
        "enum4linux-ng",
        "smbclient",
        "smbmap",
        "crackmapexec",
        "netexec",
        "nxc",
        "rpcclient",
        "ldapsearch",
        "snmpwalk",
        "onesixtyone",
        "sslscan",
        "sslyze",
        "testssl",
        "testssl.sh",
        "ping",
        "fping",
        "hping3",
        "traceroute",
        "arp-scan",
        "netdiscover",
        "nc",
        "ncat",
        "netcat",
        "telnet",
        "ssh",
        "ftp",
        "evil-winrm",
        "xfreerdp",
        "rdesktop",
        "msfconsole",
        "searchsploit",
        "impacket-psexec",
        "impacket-secretsdump",
    ]
)
"""Programs pointed at a target: scanners, brute-forcers and remote shells (their names)."""
CLIENTS = frozenset(
    ["curl", "wget", "http", "https", "xh", "httpie", "openssl", "mysql", "psql", "redis-cli"]
)
"""Clients whose IP arguments are targets (their host names may be downloads)."""

_SCOPE_RE = re.compile(r"\b(?:(?:in|out\s+of|within)[\s-]+scope|scope)\b")
_ONLY_RE = re.compile(r"\b(?:only|exclusively)\b")
_ATTACK_RE = re.compile(r"\b(?:scan\w*|attack\w*|exploit\w*|prob(?:e|es|ed|ing)|pentest\w*)\b")
_IPV4 = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}"
_NET_RE = re.compile(rf"(?<![\w.])({_IPV4})(?:/(\d{{1,2}})(?!\d)|-(\d{{1,3}})(?!\d))?(?![\w]|\.\d)")
_NAME_RE = re.compile(
    r"(?<![\w./@-])(?:\*\.)?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}\b"
)
_FILE_ENDINGS = frozenset(
    [
        "txt",
        "md",
        "json",
        "csv",
        "yaml",
        "yml",
        "toml",
        "xml",
        "html",
        "py",
        "sh",
        "log",
        "ini",
        "cfg",
        "conf",
        "lst",
        "list",
        "nmap",
        "gnmap",
    ]
)

Target = ipaddress.IPv4Network | str


def states_scope(sentence: str) -> bool:
    """Whether ``sentence`` states a scope of network targets: it speaks of scope ("out of
    scope", "in scope"), or says only some targets may be attacked.

    >>> states_scope("Only hosts listed in scope.txt may be scanned or attacked.")
    True
    >>> states_scope("Only fetch from pypi.org."), states_scope("Keep the diff small.")
    (False, False)
    """
    low = sentence[:600].casefold()
    return bool(_SCOPE_RE.search(low) or (_ONLY_RE.search(low) and _ATTACK_RE.search(low)))


def _network(address: str, prefix: str | None, last: str | None) -> list[ipaddress.IPv4Network]:
    """The networks an address, ``a.b.c.d/n`` or an nmap range ``a.b.c.d-e`` covers."""
    try:
        if prefix is not None:
            return [ipaddress.IPv4Network(f"{address}/{prefix}", strict=False)]
        net = ipaddress.IPv4Network(address)
        if last is None:
            return [net]
        end = ipaddress.IPv4Address(address.rsplit(".", 1)[0] + "." + last)
        return list(ipaddress.summarize_address_range(net.network_address, end))
    except ValueError:
        return []


def networks_in(text: str) -> list[ipaddress.IPv4Network]:
    """The IPv4 networks ``text`` names (addresses as /32), in order, unique.

    >>> [str(n) for n in networks_in("audit 10.27.17.0/24 and 10.0.0.5, not 1.2.3")]
    ['10.27.17.0/24', '10.0.0.5/32']
    """
    out: list[ipaddress.IPv4Network] = []
    for m in _NET_RE.finditer(text[:MAX_CHARS]):
        for net in _network(m[1], m[2], m[3]):
            if net not in out:
                out.append(net)
    return out


def named_scope(sentence: str, text: str) -> list[str]:
    """What a scope sentence allows: the networks of the whole instruction ``text`` (the
    task often names the range) that are not loopback, and the host names the sentence
    names (not file names: ``scope.txt`` is a file).

    >>> named_scope("Only hosts in scope may be scanned.", "Audit 10.27.17.0/24 (scope.txt).")
    ['10.27.17.0/24']
    """
    nets = [n for n in networks_in(text) if not n.is_loopback]
    out = [str(n.network_address) if n.prefixlen == 32 else str(n) for n in nets]
    for m in _NAME_RE.finditer(sentence[:600].casefold()):
        name = m[0]
        if name.rsplit(".", 1)[-1] in _FILE_ENDINGS or name in out:
            continue
        out.append(name)
    return out


def argument_strings(
    value: Any, limit: int = MAX_CHARS, skip: re.Pattern[str] | None = None
) -> list[str]:
    """The strings (and numbers, as text) of parsed arguments, in order, at most ``limit``
    characters in all; values under keys ``skip`` matches are left out.

    >>> argument_strings({"to": "a@b.c", "rows": [["x", 3]]}, skip=re.compile("to"))
    ['x', '3']
    """
    out: list[str] = []
    budget = [limit]

    def walk(v: Any) -> None:
        if budget[0] <= 0:
            return
        if isinstance(v, str):
            out.append(v[: budget[0]])
            budget[0] -= len(v)
        elif isinstance(v, Mapping):
            for k, item in v.items():
                if skip is None or not (isinstance(k, str) and skip.match(k)):
                    walk(item)
        elif isinstance(v, list | tuple):
            for item in v:
                walk(item)
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(str(v))

    walk(value)
    return out


def _shell_targets(command: str) -> list[Target]:
    """Targets of the network programs of one shell command line."""
    out: list[Target] = []
    for words in simple_commands(tokenize(command)):
        _, argv = strip_prefixes(words)
        while argv and argv[0].rsplit("/", 1)[-1] in ("proxychains", "proxychains4"):
            argv = argv[1:]
        if not argv:
            continue
        program = argv[0].rsplit("/", 1)[-1]
        scanner = program in SCANNERS or program.startswith("impacket-")
        if not (scanner or program in CLIENTS):
            continue
        for arg in argv[1:]:
            value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
            out.extend(networks_in(value))
            if not scanner or value.startswith("-"):
                continue
            host = host_of(value) if "://" in value else None
            if host is None and "/" not in value and "@" not in value:
                name = value.split(":", 1)[0].casefold()
                if _NAME_RE.fullmatch(name) and name.rsplit(".", 1)[-1] not in _FILE_ENDINGS:
                    host = clean_host(name)
            elif host is None and "@" in value:  # ssh user@host
                host = clean_host(value.rsplit("@", 1)[1].split(":", 1)[0])
            if host and not _NET_RE.fullmatch(host):
                out.append(host)
    return out


def call_targets(
    tool: str, arguments: Any, commands: Sequence[str], egress_hosts: Iterable[str] = ()
) -> list[Target]:
    """The network targets of one call (see the module docstring): IPv4 networks and, for
    scanners, host names; unique, in order.

    >>> cmd = "sudo nmap -sV -p 22 10.27.17.0/24 scanme.org"
    >>> [str(t) for t in call_targets("bash", None, [cmd])]
    ['10.27.17.0/24', 'scanme.org']
    >>> call_targets("bash", None, ["grep 10.0.0.9 hosts.txt", "curl -O https://github.com/x"])
    []
    >>> [str(t) for t in call_targets("http_get", {"url": "http://10.9.0.3:8080/"}, [])]
    ['10.9.0.3/32']
    """
    out: list[Target] = []
    for command in commands:
        out.extend(_shell_targets(command[:MAX_CHARS]))
    if not commands:
        for s in argument_strings(arguments):
            s = s.strip()
            host = host_of(s) if "://" in s[:12] else None
            if host is not None:
                out.extend(networks_in(host))
            elif _NET_RE.fullmatch(s):
                out.extend(networks_in(s))
    for host in egress_hosts:
        out.extend(networks_in(host) if _NET_RE.fullmatch(host) else ())
    return list(dict.fromkeys(out))


def outside(targets: Iterable[Target], scope: Sequence[str]) -> list[str]:
    """The targets not inside ``scope`` (networks, host names, ``*.domain``), as text.

    >>> outside([ipaddress.IPv4Network("10.27.17.9/32"), ipaddress.IPv4Network("10.27.18.1/32"),
    ...          ipaddress.IPv4Network("10.27.0.0/16"), "scanme.org", "127.0.0.1/32"],
    ...         ["10.27.17.0/24", "*.corp.example"])
    ['10.27.18.1', '10.27.0.0/16', 'scanme.org']
    """
    nets = [n for n in (_as_network(s) for s in scope) if n is not None]
    names = [s.casefold().removeprefix("*.") for s in scope if _as_network(s) is None]
    out: list[str] = []
    for t in targets:
        if isinstance(t, str):
            t_net = _as_network(t)
            if t_net is None:
                if t == "localhost" or any(t == n or t.endswith("." + n) for n in names):
                    continue
                out.append(t)
                continue
            t = t_net
        if t.is_loopback or any(t.subnet_of(n) for n in nets):
            continue
        out.append(str(t.network_address) if t.prefixlen == 32 else str(t))
    return out


def _as_network(value: str) -> ipaddress.IPv4Network | None:
    try:
        return ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        return None
