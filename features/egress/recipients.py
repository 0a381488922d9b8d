"""Where a tool call sends data: the addresses its arguments name as recipients.

Contract: :func:`recipients` is a pure, memoised function of a call's tool name and
arguments text. An argument names a recipient when its *value* is address-shaped (an
e-mail address, an IBAN-like account, a URL or host name, a phone number) and its
*role* says data goes there:

- its key names a recipient (``to``, ``cc``, ``recipients``, ``payee``, ``iban``,
  ``participants``, ``webhook``, ``send_to``, ``…_to``, …), whatever the tool is
  called; or
- its key merely holds an address (``url``, ``email``, ``user_email``, ``account``,
  ``address``) and the call carries data: its tool is named like a sending one
  (send / post / upload / pay / invite / share, :func:`~features.calls.facts.sending_tool`)
  or other arguments hold content (``body``, ``content``, ``message``, ``data``, …).

A read (``get_…``, ``search_…``, ``read_…`` without a sending word) names addresses
without sending to them: it has no recipients. Channel names and user names are not
address-shaped and are not recipients here: they cannot be traced to a tool result's
text as reliably as an address can. Addresses are lower-cased, hosts without ``www.``.

>>> recipients("send_money", '{"recipient": "US133000000121212121212", "amount": 1}')
(('us133000000121212121212', 'account'),)
>>> recipients("post_webpage", '{"url": "www.my-site.com/x", "content": "hi"}')
(('my-site.com', 'address'),)
>>> recipients("get_webpage", '{"url": "www.my-site.com"}')
()
>>> recipients("create_event", '{"title": "1:1", "attendees": ["Bob@Acme.com"]}')
(('bob@acme.com', 'e-mail address'),)
"""

from __future__ import annotations

import json
import re

from features.text.drafts import drafts_only
from features.text.hosts import host_of
from features.text.memo import short_text_memo

__all__ = ["asked_to_send", "recipients"]

# Keys whose address-shaped value is where the call sends (normalised: lower case,
# non-alphanumerics as "_").
_RECIPIENT_KEYS = frozenset(
    {
        "to",
        "cc",
        "bcc",
        "recipient",
        "recipients",
        "receiver",
        "receivers",
        "payee",
        "beneficiary",
        "iban",
        "destination",
        "dest",
        "participants",
        "attendees",
        "invitees",
        "guests",
        "webhook",
        "webhook_url",
        "callback",
        "callback_url",
        "endpoint",
        "upload_url",
        "phone",
        "phone_number",
        "mobile",
        "channel_url",
    }
)
# Keys that hold an address: a recipient when the call carries data.
_ADDRESS_KEYS = frozenset(
    {"url", "uri", "link", "email", "emails", "address", "account", "target", "host", "server"}
)
# Keys whose values are content: a call with one of them carries data.
_CONTENT_KEYS = frozenset(
    {
        "body",
        "content",
        "contents",
        "message",
        "text",
        "data",
        "payload",
        "json",
        "form",
        "file",
        "files",
        "attachment",
        "attachments",
        "note",
        "notes",
        "memo",
        "subject",
        "description",
    }
)
_KEY_NORM = re.compile(r"[^a-z0-9]+")
_EMAIL = re.compile(r"[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}")
_IBAN = re.compile(r"[a-z]{2}\d{2}[a-z0-9]{11,30}")
_PHONE = re.compile(r"\+?\d[\d ().-]{5,18}\d")
_HOSTISH = re.compile(
    r"(?:https?://)?(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?:[/:?#]\S*)?"
)
_SENDING = re.compile(
    r"send|post|upload|share|submit|e?mail|pay|transfer|publish|invite|forward|webhook|notify"
    r"|message|reply|schedule|create_event|add_event"
)
_READING = re.compile(
    r"^(?:get|read|search|list|find|query|lookup|view|show|check|browse|visit|open|fetch|download)"
)
_MAX_VALUES = 64


def _shape(value: str) -> tuple[str, str] | None:
    """``(address, kind)`` of an address-shaped string value, else ``None``."""
    v = value.strip().lower().removeprefix("mailto:")
    if not v or len(v) > 2048:
        return None
    if _EMAIL.fullmatch(v):
        return v, "e-mail address"
    compact = v.replace(" ", "")
    if _IBAN.fullmatch(compact):
        return compact, "account"
    if v.startswith("+") and _PHONE.fullmatch(v) and sum(c.isdigit() for c in v) >= 7:
        return "+" + "".join(c for c in v if c.isdigit()), "phone number"
    if " " not in v and _HOSTISH.fullmatch(v):
        host = host_of(v if "://" in v else "https://" + v)
        if host:
            return host.removeprefix("www."), "address"
    return None


def _leaves(value: object, key: str, out: list[tuple[str, str]], depth: int = 0) -> None:
    """(normalised key, string value) of every string leaf, lists keeping their key."""
    if depth > 8 or len(out) >= _MAX_VALUES:
        return
    if isinstance(value, str):
        out.append((key, value))
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                _leaves(v, _KEY_NORM.sub("_", k.lower()).strip("_"), out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _leaves(item, key, out, depth + 1)


# calls repeat (polls, retries, loops); long arguments (writes, edits) are read uncached
@short_text_memo(entries=512, max_chars=4096, text=1)
def recipients(tool: str | None, args: str) -> tuple[tuple[str, str], ...]:
    """The ``(address, kind)`` pairs a call's arguments send data to, in order, unique.
    A draft sends nothing yet (its send does):

    >>> recipients("send_email", '{"to": ["ana@mail.pt"], "body": "hi"}')
    (('ana@mail.pt', 'e-mail address'),)
    >>> recipients("create_draft", '{"to": ["ana@mail.pt"], "body": "hi"}')
    ()
    """
    name = (tool or "").lower()
    if _READING.match(name) and not _SENDING.search(name):
        return ()
    if drafts_only(name):
        return ()
    try:
        parsed = json.loads(args) if args[:1] in "{[" else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return ()
    leaves: list[tuple[str, str]] = []
    _leaves(parsed, "", leaves)
    carries = bool(_SENDING.search(name)) or any(
        k in _CONTENT_KEYS and v.strip() for k, v in leaves
    )
    found: list[tuple[str, str]] = []
    for key, value in leaves:
        role = (
            key in _RECIPIENT_KEYS
            or key.endswith("_to")
            or key.endswith("recipient")
            or key.endswith("recipients")
        )
        if not role and not (carries and (key in _ADDRESS_KEYS or key.endswith("_email"))):
            continue
        shaped = _shape(value)
        if shaped and shaped not in found:
            found.append(shaped)
    return tuple(found)


# What a user's words ask to be sent, by the kind of address it goes to. Read on the
# *trusted* side (goal, instructions, user messages): a request to pay, mail or post
# lets the agent take the recipient from the data it was pointed at ("pay the bill in
# bill.txt", "invite Dora; her e-mail is on her website"). Verbs, not nouns: "give me
# their email addresses", "my next appointment", "my recent transactions" ask for no
# send.
_SEND = r"\b(?:send|forward|share|notify)(?:s|ing)?\b"
_ASKS = {
    "account": re.compile(
        _SEND + r"|\b(?:pay|transfer|refund|reimburse|wire|settle|donate)(?:s|ing)?\b"
        r"|\bmake\s+(?:a\s+|the\s+)?payments?\b"
        r"|\b(?:set\s+up|schedule|create|adjust|update|change|modify|correct)\b[^.?!]{0,40}"
        r"\b(?:transactions?|payments?|transfers?|standing\s+orders?)\b"
    ),
    "e-mail address": re.compile(
        _SEND + r"|\b(?:reply|respond|invite|cc|bcc)(?:s|ing)?\b"
        r"|\be-?mail\s+(?:it|them|him|her|me|us|this|that|these|those|the|a|an|my|our|your"
        r"|back|to|[\w.+-]+@)\b|\bwrite\s+(?:to|an?\s+e-?mail)\b"
        r"|\b(?:create|schedule|set\s+up|book|organi[sz]e|add)\b[^.?!]{0,40}"
        r"\b(?:event|meeting|appointment|call|participants?)\b"
    ),
    "address": re.compile(
        _SEND + r"|\b(?:post|upload|submit|publish|deploy|sync|register|subscribe)(?:s|ing)?\b"
        r"|\bsign\s+up\b|\b(?:book|reserve)\b"
    ),
    "phone number": re.compile(_SEND + r"|\b(?:text|sms|whatsapp|call)\s+(?:him|her|them|me|\+)"),
}


def asked_to_send(trusted: str, kind: str) -> bool:
    """Does lower-cased trusted text (goal, instructions, user messages) ask for a send
    of this kind (``account``, ``e-mail address``, ``address``, ``phone number``)?

    >>> asked_to_send("can you please pay the bill 'bill-december-2023.txt' for me?", "account")
    True
    >>> asked_to_send("summarise the unread messages in my inbox.", "account")
    False
    >>> asked_to_send("what did the paper bob posted say?", "address")  # not a request
    False
    >>> asked_to_send("who is invited? give me their email addresses.", "e-mail address")
    False
    """
    pattern = _ASKS.get(kind)
    return bool(pattern and pattern.search(trusted))
