"""Where a tool call sends traffic, read from its arguments.

HTTP client spans show egress the runtime instrumented; this module finds the rest:
URLs in any argument string, ``url``/``host`` fields, shell commands in command-like
fields and shell tools (their network programs: :mod:`features.egress.shell`), e-mail
recipients of mail tools. Pure: no DNS, no I/O.

Decisions
---------
- A *bare* host name (``example.com``) counts only where the caller meant a host: the
  value of a ``url``/``host``-like key, or an operand of a network command. In prose it
  does not ("see example.com for details").
- ``localhost`` and private addresses are reported: it is still traffic, to a local
  service; detectors decide whether it matters.
- E-mail addresses are not hosts to contact, except in tools named like mail/email/smtp
  where recipients' domains are reported (``via="email_recipient"``, ``url="mailto:…"``):
  sending mail to a domain is the exfiltration path detectors care about.
- What is a host at all is :mod:`features.text.hosts`' decision.
- URLs are reported as found (credentials included): callers redact ``egress_url``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping

from features.egress.shell import command_targets
from features.egress.target import EgressTarget, url_target
from features.text.clip import MAX_ANALYSED_CHARS, analysed
from features.text.hosts import clean_host, host_of
from features.text.memo import short_text_memo

__all__ = ["egress_targets"]

_URL_RE = re.compile(
    r"(?<![\w+.-])(?:https?|wss?|ftps?|sftp|ssh|git|git\+https|git\+ssh|rsync|grpcs?|"
    r"redis|rediss|postgres|postgresql|mysql|mongodb|mongodb\+srv|amqps?|nats|smtps?|imaps?)"
    r"://[^\s\"'<>`\\|^{}]+",
    re.IGNORECASE,
)
_TRAILING = ".,;:!?'\")]}>"


def _urls(text: str) -> Iterator[str]:
    if "://" not in text:  # every URL the pattern takes has one: most strings do not
        return
    for m in _URL_RE.finditer(text):
        url = m.group(0)
        while url and url[-1] in _TRAILING:
            if url[-1] == ")" and url.count("(") >= url.count(")"):
                break  # a balanced paren belongs to the URL (wiki links)
            url = url[:-1]
        yield url


_SHELL_KEYS = frozenset(
    {"command", "cmd", "script", "bash", "shell", "commands", "sh", "command_line", "commandline"}
)
_URL_KEYS = frozenset(
    {
        "url",
        "uri",
        "endpoint",
        "href",
        "link",
        "base_url",
        "baseurl",
        "api_base",
        "webhook",
        "webhook_url",
        "target_url",
        "remote_url",
        "repo_url",
        "repository_url",
        "server_url",
        "address",
    }
)
_HOST_KEYS = frozenset({"host", "hostname", "server", "domain", "remote_host"})
_EMAIL_KEYS = frozenset(
    {
        "to",
        "cc",
        "bcc",
        "recipient",
        "recipients",
        "email",
        "address",
        "emails",
        "send_to",
        "reply_to",
    }
)
_SHELL_TOOL_RE = re.compile(
    r"bash|shell|terminal|command|execute|exec\b|run_cmd|cmd|console", re.IGNORECASE
)
_HTTP_TOOL_RE = re.compile(
    r"http|fetch|request|browse|navigate|web|url|curl|download|webhook|api", re.IGNORECASE
)
_MAIL_TOOL_RE = re.compile(r"mail|smtp", re.IGNORECASE)
_EMAIL_RE = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)"
)
"""As :data:`features.egress.result_addresses.EMAIL_RE`: tried at run starts only (linear)."""
_MAX_WALK = 32
MAX_TARGETS = 256
"""Most targets one call reports (the first ones, in order): a blob of thousands of URLs
is one call's egress, not thousands of steps' worth of analysis."""


def _maybe_json(text: str) -> object:
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] in "{[" and stripped[-1] in "}]":
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):
            return None
    return None


class _Collector:
    """Walks arguments and gathers targets in order, first finding wins."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.shell_tool, self.http_tool, self.mail_tool = _tool_kinds(tool)
        self.targets: list[EgressTarget] = []
        self.later: list[EgressTarget] = []  # generic URL scan: after specific findings
        self.budget = MAX_ANALYSED_CHARS
        """Characters of text still to examine: the whole walk reads at most this many."""

    def walk(self, value: object, key: str | None = None, depth: int = 0) -> None:
        if depth > _MAX_WALK or self.budget <= 0:
            return
        if isinstance(value, str):
            self.string(value, key, depth)
        elif type(value) is dict or isinstance(value, Mapping):
            # each str key lower-cased once, for the three passes below
            items = [(k.lower(), v) for k, v in value.items() if isinstance(k, str)]
            method = None
            for low, v in items:
                if low == "method" and isinstance(v, str):
                    method = v.upper()
                    break
            # url/host keys first: they name the target, other strings merely mention URLs
            for low, v in items:
                if low in _URL_KEYS or low in _HOST_KEYS:
                    self.keyed(v, low, method)
            for low, v in items:
                self.walk(v, low, depth + 1)
        elif isinstance(value, (list, tuple)):
            if key in _SHELL_KEYS and value and all(isinstance(v, str) for v in value):
                command = shlex.join(value)[: self.budget]  # argv form: ["curl", "-s", url]
                self.budget -= len(command)
                self.shell(command)
            for item in value:
                self.walk(item, key, depth + 1)

    def keyed(self, value: object, key: str, method: str | None) -> None:
        values = value if isinstance(value, list) else [value]
        for v in values:
            if not isinstance(v, str):
                continue
            if key in _HOST_KEYS:
                host = host_of(v, bare=True, single_label=True)
                if host:
                    self.targets.append(EgressTarget(host, None, None, "host_in_arguments"))
                continue
            via = "http_tool" if self.http_tool else "url_in_arguments"
            if "://" in v:
                target = url_target(v.strip(), via, method if self.http_tool else None)
            else:
                host = host_of(v, bare=True)
                target = EgressTarget(host, v.strip(), method, via) if host else None
            if target:
                self.targets.append(target)

    def string(self, text: str, key: str | None, depth: int) -> None:
        if self.budget <= 0:
            return
        parsed = _maybe_json(text)
        if parsed is not None:
            self.walk(parsed, key, depth + 1)
            return
        text = text[: self.budget]
        self.budget -= len(text)
        if key in _SHELL_KEYS or (self.shell_tool and key in (None, "input", "code")):
            self.shell(text)
        if self.mail_tool and key in _EMAIL_KEYS:
            for m in _EMAIL_RE.finditer(text):
                host = clean_host(m.group(1))
                if host:
                    url = "mailto:" + m.group(0)
                    self.targets.append(EgressTarget(host, url, None, "email_recipient"))
        if "://" in text:
            for url in _urls(text):
                target = url_target(url, "url_in_arguments")
                if target:
                    self.later.append(target)

    def shell(self, command: str) -> None:
        self.targets.extend(command_targets(command))

    def result(self) -> list[EgressTarget]:
        if not self.later and len(self.targets) < 2:
            return self.targets  # nothing to drop (most calls: none or one target)
        seen: set[tuple[str, str | None] | tuple[str, None, str]] = set()
        out: list[EgressTarget] = []
        for target in self.targets + self.later:
            if len(out) == MAX_TARGETS:
                break
            key: tuple[str, str | None] | tuple[str, None, str] = (
                (target.host, target.url) if target.url else (target.host, None, target.via)
            )
            if key not in seen:
                seen.add(key)
                out.append(target)
        return out


@short_text_memo(entries=1024, max_chars=256)
def _tool_kinds(tool: str) -> tuple[bool, bool, bool]:
    """Whether a tool called ``tool`` is a shell, an HTTP and a mail tool (pure in the
    name, and a run calls a few tools many times: three regex searches a call saved)."""
    shell_tool = bool(_SHELL_TOOL_RE.search(tool))
    http_tool = bool(_HTTP_TOOL_RE.search(tool)) and not shell_tool
    return shell_tool, http_tool, bool(_MAIL_TOOL_RE.search(tool))


def egress_targets(tool: str | None, arguments: object) -> list[EgressTarget]:
    """Every place the tool call ``tool(arguments)`` would send traffic, in order, unique.

    ``arguments`` may be a dict, a list, a JSON string or a plain string; anything else
    gives no targets. Never raises on JSON-like input.

    >>> [(t.host, t.method, t.via) for t in egress_targets("bash",
    ...     {"command": "curl -sSL -X POST https://api.example.com/v1 -d @f && git fetch origin"})]
    [('api.example.com', 'POST', 'curl')]
    >>> egress_targets("shell", "git clone git@github.com:org/repo.git")[0].url
    'https://github.com/org/repo'
    """
    collector = _Collector(tool or "")
    if isinstance(arguments, str):
        parsed = _maybe_json(arguments)
        if parsed is not None:
            collector.walk(parsed)
        elif collector.shell_tool:
            collector.shell(analysed(arguments))
            collector.string(arguments, "", 0)  # plus the generic URL scan
        else:
            collector.string(arguments, None, 0)
    elif type(arguments) is dict or isinstance(arguments, (Mapping, list, tuple)):
        collector.walk(arguments)
    return collector.result()
