"""Personal data by its shape: the values a rule "mask IBANs before writing to the sheet"
is about, recognised with a check that a random string of the same length rarely passes.

Kinds (:data:`KINDS`), each a bounded regex for the shape and a check in Python:

- ``iban``: a country code, two check digits and 11–30 letters or digits (groups of four
  may be spaced), whose ISO 13616 mod-97 remainder is 1 (a random string passes 1 in 97).
- ``card``: 15 or 16 digits (spaced or dashed in groups), starting as the card networks
  number them (``2``–``6``), passing the Luhn check. 13-, 14-, 17–19-digit numbers are
  left out: epoch milliseconds (13 digits) and nanoseconds (19) fill tool arguments, and
  one in ten passes Luhn.
- ``email``: an address (``local@domain.tld``).
- ``phone``: E.164 only (``+`` and 8–15 digits, spaces, dots or dashes between them); the
  national shapes (``(030) 1234567``, ``555-0100``) are not bounded enough to tell from
  other numbers.
- ``national_id``: the Spanish DNI (8 digits and the letter of their remainder mod 23) and
  NIE (``X``/``Y``/``Z``, 7 digits, the same letter check). Other countries' numbers have
  no check this module knows (a US SSN is nine digits with no check digit); they are
  not recognised.

A masked value (``****5453``, ``DE** **** 4411``, ``***``) has no digits where the shape
needs them, so it is not found: masking is what keeps a call compliant.

Pure; linear in the text (each regex is a bounded run after a fixed anchor), at most
:data:`MAX_CHARS` examined.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = ["KINDS", "MASK_RE", "MAX_CHARS", "unmasked"]

MAX_CHARS = 65_536
"""Text examined (a call's arguments)."""

MASK_RE = re.compile(r"[*•xX#]{3,}|\[REDACTED|<redacted>|\bREDACTED\b")
"""A masked value's mark: what shows the agent masked."""

_IBAN_RE = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])"
)
_CARD_RE = re.compile(r"(?<![\d.,-])[2-6]\d{3}(?:[ -]?\d{4}){2}[ -]?\d{3,4}(?![\d])")
_EMAIL_RE = re.compile(
    r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,4}\.[A-Za-z]{2,24}\b"
)
_PHONE_RE = re.compile(r"(?<![\w+])\+[1-9](?:[ .-]?\d){7,14}(?![\d])")
_DNI_RE = re.compile(r"(?<![A-Za-z0-9])([XYZ]?)(\d{7,8})-?([A-Z])(?![A-Za-z0-9])")
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def iban_valid(value: str) -> bool:
    """Whether ``value`` (spaces allowed) is an IBAN by its ISO 13616 check: the first four
    characters moved to the end, letters as 10–35, the number mod 97 is 1.

    >>> iban_valid("DE89 3704 0044 0532 0130 00"), iban_valid("DE89 3704 0044 0532 0130 01")
    (True, False)
    """
    s = value.replace(" ", "").upper()
    if not 15 <= len(s) <= 34 or not s.isalnum():
        return False
    rest = 0
    for c in s[4:] + s[:4]:
        for d in str(int(c, 36)):
            rest = (rest * 10 + int(d)) % 97
    return rest == 1


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (card numbers).

    >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
    (True, False)
    """
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def dni_valid(prefix: str, number: str, letter: str) -> bool:
    """Whether a Spanish DNI (8 digits) or NIE (X/Y/Z and 7 digits) has its check letter.

    >>> dni_valid("", "12345678", "Z"), dni_valid("X", "1234567", "L")
    (True, True)
    >>> dni_valid("", "12345678", "A")
    False
    """
    if prefix:
        if len(number) != 7:
            return False
        number = str("XYZ".index(prefix)) + number
    elif len(number) != 8:
        return False
    return _DNI_LETTERS[int(number) % 23] == letter


def _ibans(text: str) -> Iterable[str]:
    return (m[0] for m in _IBAN_RE.finditer(text) if iban_valid(m[0]))


def _cards(text: str) -> Iterable[str]:
    for m in _CARD_RE.finditer(text):
        digits = re.sub(r"[ -]", "", m[0])
        if len(digits) in (15, 16) and luhn_valid(digits):
            yield m[0]


def _emails(text: str) -> Iterable[str]:
    return (m[0] for m in _EMAIL_RE.finditer(text))


def _phones(text: str) -> Iterable[str]:
    return (m[0] for m in _PHONE_RE.finditer(text))


def _national_ids(text: str) -> Iterable[str]:
    return (m[0] for m in _DNI_RE.finditer(text) if dni_valid(m[1], m[2], m[3]))


KINDS: dict[str, Callable[[str], Iterable[str]]] = {
    "iban": _ibans,
    "card": _cards,
    "email": _emails,
    "phone": _phones,
    "national_id": _national_ids,
}
"""The kinds recognised, each with the function finding its values in a text."""


def unmasked(text: str, kinds: Iterable[str]) -> list[tuple[str, str]]:
    """(kind, value) of each unmasked value of ``kinds`` in ``text`` (its first
    :data:`MAX_CHARS`), at most 8; kinds not in :data:`KINDS` are ignored.

    >>> unmasked("iban DE89370400440532013000, card ****5453", ["iban", "card"])
    [('iban', 'DE89370400440532013000')]
    >>> unmasked("IBAN DE** **** **** 3000, mail j***@x.com", ["iban", "email"])
    []
    """
    text = text[:MAX_CHARS]
    out: list[tuple[str, str]] = []
    for kind in kinds:
        find = KINDS.get(kind)
        if find is None:
            continue
        for value in find(text):
            out.append((kind, value))
            if len(out) >= 8:
                return out
    return out
