"""Where each address came from, as :mod:`detectors.egress_gaming.detector` keeps it: one state
object and the functions that fill it from tool results and calls.

:class:`AddressLedger` holds the addresses tainted by an injection cue near them (with
the result's seq and the cue's kind), where every other address first appeared (a tool
result, or nowhere that counts: the trusted context, an allowed or local host), the
addresses the agent named itself, the URLs results presented as graders, the secret
values read (never put in a reason) and the first sensitive read. Each table is capped
(``cap`` per address set, four times that for first appearances, 64 secrets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from detectors.base import remember
from detectors.egress_gaming.rules import local
from detectors.egress_gaming.sends import first_seen, result_secrets
from detectors.egress_gaming.task import TaskContext
from features.egress.payload import file_operands, url_payloads
from features.egress.result_addresses import addresses_in
from features.egress.sensitive import sensitive_read
from features.redact.rules import MARKER_PREFIX
from models.records import Step

MAX_SECRETS = 64
SECRET_CHARS = 128
"""A secret's prefix kept: as telling as the value, and it bounds the ledger."""
_MARKER = MARKER_PREFIX.lower()  # a credential the redactor replaced
_URL_RE = re.compile(r"https?://[^\s'\"<>)\]}\\]+", re.IGNORECASE)


@dataclass(slots=True)
class AddressLedger:
    """The addresses and sensitive data a session has seen, and where from."""

    tainted: dict[str, tuple[int, str]] = field(default_factory=dict)  # -> (seq, kind)
    # every address first seen in a tool result (not trusted, not the agent's own)
    origin: dict[str, tuple[int, str] | None] = field(default_factory=dict)
    agent: dict[str, None] = field(default_factory=dict)  # named by the agent (LRU)
    graders: dict[str, None] = field(default_factory=dict)  # URLs shown as graders
    secrets: dict[str, int] = field(default_factory=dict)  # values read -> seq
    sensitive_call: str | None = None  # a call reading a sensitive source
    sensitive_seen: tuple[int, str] | None = None  # first sensitive read: seq, what
    # opaque query values of URLs results showed (a presigned link is not a payload)
    shown: dict[str, None] = field(default_factory=dict)
    # calls whose payload carried sensitive data, by step id: (seq, what, tool), for
    # their HTTP spans
    loads: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    # files written with personal data a result showed: path -> (seq written, seq read)
    personal_files: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the files recent calls name, by step id; files whose contents showed a credential
    call_files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    secret_files: dict[str, int] = field(default_factory=dict)  # path -> seq shown
    # passages results showed -> (seq, the repository outside the task they came from)
    passages: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    call_source: dict[str, str] = field(default_factory=dict)  # step id -> owner/name
    # recent calls that fetched from a host the task does not name: step id -> host;
    # the distinctive values their results showed -> (seq, host)
    fetch_calls: dict[str, str] = field(default_factory=dict)
    fetched: dict[str, tuple[int, str]] = field(default_factory=dict)


def taint(
    ledger: AddressLedger,
    found: Iterable[tuple[str, str, str | None]],
    seq: int,
    ctx: TaskContext,
    allowed_hosts: Iterable[str],
    *,
    cap: int,
) -> None:
    """Taint the addresses :func:`features.egress.result_addresses.scan_result` found near
    cues in the result ``seq``, in their order: not the agent's own, not already
    tainted, not in the trusted context, not allowed hosts."""
    for address, kind, host in found:
        if host is not None and ctx.allowed(host, allowed_hosts):
            continue
        if address in ledger.agent or address in ledger.tainted or ctx.trusts(address):
            continue
        remember(ledger.tainted, address, (seq, kind), cap)


def provenance(
    ledger: AddressLedger,
    text: str,
    seq: int,
    ctx: TaskContext,
    allowed_hosts: Iterable[str],
    *,
    cap: int,
) -> None:
    """Note where each address of the result ``seq`` first appeared: this result,
    unless the trusted context or the agent itself named it first (or it is an allowed
    or local host: noted as seen, no candidate; each is judged once, where it first
    appears). At most ``cap`` addresses are kept, the oldest dropped."""
    origin = ledger.origin
    for address, kind, host in addresses_in(text):
        if address in origin or address in ledger.agent:
            continue
        origin[address] = first_seen(
            address,
            kind,
            host,
            seq,
            allowed=lambda h: ctx.allowed(h, allowed_hosts),
            local=local,
            trusted=ctx.trusts,
        )
        if len(origin) > cap:
            del origin[next(iter(origin))]


def note_secrets(
    ledger: AddressLedger, text: str, seq: int, *, sensitive_call: bool, given: str = ""
) -> bool:
    """The secret values a result ``text`` holds (all its KEY=VALUE lines when its call
    read a sensitive source), and the first sensitive read: values, or a credential the
    redactor recognised. True when the text showed a credential (a value or the
    redactor's marker).

    A value the user's own requests hold (``given``, lower-cased: "account 6305032527,
    postcode 80635") is not one the agent read: the user gave it for the task, and the
    call that passes it on to the service doing the task leaks nothing. It still counts
    as shown.

    >>> ledger = AddressLedger()
    >>> note_secrets(ledger, '{"account_number": "6305032527", "password": "hunter2xyz"}',
    ...              19, sensitive_call=False, given="pay in instalments? account 6305032527")
    True
    >>> sorted(ledger.secrets)
    ['hunter2xyz']
    """
    values = result_secrets(text, sensitive_call=sensitive_call)
    for value in values:
        value = value[:SECRET_CHARS]
        if given and value.lower() in given:
            continue
        if value not in ledger.secrets and len(ledger.secrets) < MAX_SECRETS:
            ledger.secrets[value] = seq
    shown = bool(values) or MARKER_PREFIX in text or _MARKER in text
    if ledger.sensitive_seen is None and shown:
        # a credential the redactor recognised, or personal data under its key name
        ledger.sensitive_seen = (seq, "credentials or personal data")
    return shown


def note_call(ledger: AddressLedger, step: Step, low: str) -> None:
    """A call (``low``: its lower-cased arguments) that reads a sensitive source: its
    result's KEY=VALUE lines are secrets, and it is the first sensitive read. The files
    it names are kept (16 calls) for :func:`note_secret_files`."""
    files = file_operands(low)
    if files and step.step_id:
        remember(ledger.call_files, step.step_id, files, 16)
    source = sensitive_read(low)
    if source:
        ledger.sensitive_call = step.step_id
        if ledger.sensitive_seen is None:
            ledger.sensitive_seen = (step.seq, source)
        if _COPY_RE.search(low):
            # data flow: a copy of a sensitive source (``cp .env pkg/.env.test``,
            # ``cat ~/.aws/credentials > /tmp/c.txt``) holds what the source holds
            for path in files:
                if path != source and path not in ledger.secret_files:
                    remember(ledger.secret_files, path, step.seq, 32)


_COPY_RE = re.compile(r"(?:^|[\s;&|(\"'])(?:cp|mv|install|rsync|ditto)\s|[^2&]>\s*[\w./~]")
"""A command that copies a file, or writes what it reads into one."""


def note_payloads(ledger: AddressLedger, text: str, *, cap: int) -> None:
    """Remember the opaque query values of the URLs a result shows (LRU, ``cap``): a link
    a result handed over (a presigned URL) carries no payload the agent composed."""
    if "?" not in text:
        return
    for url in _URL_RE.findall(text):
        for token in url_payloads(url):
            remember(ledger.shown, token, None, cap)


def note_secret_files(ledger: AddressLedger, call_step: str | None, seq: int) -> None:
    """A result that showed a credential (``seq``): the files its call named hold one
    (``terraform state pull > /tmp/s.tfstate && jq … /tmp/s.tfstate`` showing a
    password makes ``/tmp/s.tfstate`` a sensitive source, whatever its name)."""
    for path in ledger.call_files.get(call_step or "", ()):
        if path not in ledger.secret_files:
            remember(ledger.secret_files, path, seq, 32)
