"""What :mod:`detectors.intent_drift.detector` remembers of the recent calls and results: one
state object and the functions that keep it.

:class:`CallLog` holds the count of calls, whether a tool result has reached the agent
yet, the weight each recent call got (results inherit it: a host or path first named by
the result of an off-task call is off task too), the recent actions (a repeat is judged
as the first one was), the last few results' text (where a query's words came from), a
recent result that addressed the agent, and the last judged call. Every table is capped.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from detectors.base import remember, remember_all
from detectors.intent_drift.provenance import FOREIGN_PASSAGES, Passage, foreign_passages
from detectors.intent_drift.scope import MAX_WORD_CHARS, known, named_domains
from detectors.intent_drift.task import MAX_WORDS, TaskState, learn_failure, learn_links
from detectors.intent_drift.weigh import query_hits
from features.calls.step_features import StepFeatures
from features.calls.vectors import CONTENT_DROP, tokenize
from models.records import Step

RECENT_RESULTS = 4
"""Results kept for their text, and calls for which a result addressing the agent
still counts as what led it."""
_RECENT_ACTIONS = 8
_RECENT_CALLS = 16
MAX_TOOLS = 64
"""Tools used (and tools a result led to) the log keeps."""
MAX_DELEGATED = 512
"""Words of the results of calls on an address the task names, kept."""
MAX_AUTHORED = 1024
"""Words of the agent's own call arguments kept (the newest)."""
AUTHORED_CHARS = 2_000
"""Characters of a call's arguments whose words are kept."""


@dataclass(slots=True)
class CallLog:
    """The recent calls and results of a session, as the drift rules need them."""

    calls: int = 0
    informed: bool = False  # whether a tool result has reached the agent yet
    # recent calls (step id and call id) → (weight, whether the call was a query)
    call_weight: dict[str, tuple[float, bool]] = field(default_factory=dict)
    recent: dict[str, tuple[float, bool]] = field(default_factory=dict)  # action → same
    # recent results: (text, seq, weight of their call, the links it lists when it is
    # an on-task query's list of hits, else "")
    results: deque[tuple[str, int, float, str]] = field(
        default_factory=lambda: deque(maxlen=RECENT_RESULTS)
    )
    instructed: int | None = None  # seq of a recent result instructing the agent
    since_instructed: int = 0  # calls since then
    last_weight: float = 0.0  # weight of the last judged call
    last_blind: bool = True  # whether its result was invisible (none, or empty)
    last_paths: set[str] = field(default_factory=set)
    edits: int = 0  # on-task changes so far
    # calls on an object the task names by its address (the page it points to): their
    # results are the task's own text
    own_calls: dict[str, None] = field(default_factory=dict)
    delegated: dict[str, None] = field(default_factory=dict)  # their results' words
    tools: dict[str, None] = field(default_factory=dict)  # tools used so far
    led_tools: dict[str, int] = field(default_factory=dict)  # tool a result named → its seq
    # the values on-task reads returned (ids, amounts, codes: :func:`value_words`): using
    # them continues the task, it is not a topic a result brought up
    data: dict[str, None] = field(default_factory=dict)
    # the page the agent is on: the call that navigated there (its step id and call id),
    # its tool's family (:func:`family`) and, while that navigation was on task, the
    # words of what it and the UI actions since (calls of that family naming no place
    # of their own: a click, a snapshot) showed
    page_call: tuple[str, str] = ("", "")
    # records the calls named by id (``page_id``, ``order_id``): value → weight of the
    # call that first named it (0: an on-task result or call, or the requests)
    entities: dict[str, float] = field(default_factory=dict)
    blind_ids: bool = False  # an on-task call used an id nothing visible named
    page_family: str = ""
    page: dict[str, None] = field(default_factory=dict)
    # passages of results that are not about the task, and the objects they name
    # (:mod:`detectors.intent_drift.provenance`): what a later call takes from them
    foreign: deque[Passage] = field(default_factory=lambda: deque(maxlen=FOREIGN_PASSAGES))
    # the words the agent's own calls wrote (its paths, packages, names): a passage that
    # names them did not bring them up - the agent was there before it
    authored: dict[str, None] = field(default_factory=dict)
    # the objects (tables, records) on-task calls named: the work made or used them
    # (:func:`note_objects`); not what results listed
    touched: dict[str, None] = field(default_factory=dict)
    # the records recent calls named by id (step id and call id -> ids), and the records
    # whose read returned a foreign passage (:func:`note_carrier`)
    call_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    carriers: dict[str, None] = field(default_factory=dict)
    # the argument slots on-task calls filled with a value the requests name
    # (``collection`` -> ``winter-outerwear``): :func:`note_slots`
    slots: dict[str, str] = field(default_factory=dict)
    # the records an on-task listing held beside the one the requests name by its name
    # (id -> the words of its name): :func:`passed_over`
    passed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # identifiers of the shape of one the requests name that results showed (a queue's
    # case numbers), and the siblings of that shape the agent read that nothing showed
    # (:func:`unshown_sweep`)
    shown: dict[str, None] = field(default_factory=dict)
    swept: dict[str, None] = field(default_factory=dict)


def count_call(log: CallLog) -> None:
    """A tool call: counted, and a result that addressed the agent ages by one call."""
    log.calls += 1
    log.since_instructed += 1
    if log.since_instructed > RECENT_RESULTS:
        log.instructed = None


def note_authored(log: CallLog, arguments: str | None) -> None:
    """The words of a judged call's ``arguments`` (their first :data:`AUTHORED_CHARS`)
    are the agent's own from now on."""
    words = tokenize((arguments or "")[:AUTHORED_CHARS], drop=CONTENT_DROP)
    remember_all(log.authored, words, None, MAX_AUTHORED)


def repeated(log: CallLog, key: str, action: str) -> float | None:
    """The weight of the first of the recent calls that ``action`` repeats (recorded
    again for this call, ``key``, at no less than on task), or None for a new action."""
    seen = log.recent.get(action) if action else None
    if seen is None:
        return None
    before, query = seen
    remember(log.recent, action, seen, _RECENT_ACTIONS)
    remember(log.call_weight, key, (max(before, 0.0), query), _RECENT_CALLS)
    return before


def paged_key(tool: str | None, arguments: object) -> str | None:
    """The request a call continues when only whole numbers of its arguments change (a
    search's ``page``, an ``offset``): its tool and its top-level arguments with each
    integer blanked, or None when it has no integer argument or no free text (a string
    with a space: the query paged through - a record fetched by its number, ``{"repo":
    "x/y", "number": 1620}``, is another record, not a further page). A further page of
    one search reads on through what that request returns: it is the same request,
    weighed as the first page was, not a new topic each page.

    >>> paged_key("mail_search", {"query": "booking ZK", "page": 2})
    'mail_search {"page": "#", "query": "booking ZK"}'
    >>> paged_key("mail_search", {"query": "booking ZK"}) is None
    True
    >>> paged_key("get_issue", {"repo": "x/y", "number": 1620}) is None
    True
    """
    if not isinstance(arguments, Mapping):
        return None
    blanked = {
        str(k): "#" if isinstance(v, int) and not isinstance(v, bool) else v
        for k, v in arguments.items()
    }
    values = arguments.values()
    if not any(isinstance(v, int) and not isinstance(v, bool) for v in values) or not any(
        isinstance(v, str) and " " in v.strip() for v in values
    ):
        return None
    try:
        text = json.dumps(blanked, sort_keys=True, default=str)[:2_000]
    except (TypeError, ValueError):
        return None
    return f"{tool} {text}"


def note_paged(log: CallLog, key: str | None, weight: float, query: bool) -> None:
    """Record a new call's ``weight`` under its :func:`paged_key` too (its later pages
    are judged as it was)."""
    if key:
        remember(log.recent, key, (weight, query), _RECENT_ACTIONS)


def note_own(log: CallLog, step: Step) -> None:
    """A call on an object the task names: its result holds what the task delegated
    (a to-do list the user pointed at), not a lead away from it."""
    for key in (step.step_id, step.call_id):
        if key:
            remember(log.own_calls, key, None, _RECENT_CALLS)


def note_call(log: CallLog, step: Step, action: str, weight: float, query: bool) -> None:
    """Record the ``weight`` a new call got, for its repeats and its result."""
    if action:
        remember(log.recent, action, (weight, query), _RECENT_ACTIONS)
    remember(log.call_weight, step.step_id, (weight, query), _RECENT_CALLS)
    if step.call_id:
        remember(log.call_weight, step.call_id, (weight, query), _RECENT_CALLS)


def led_by_result(
    log: CallLog, tool: str | None, led: Callable[[Collection[str]], int | None]
) -> int | None:
    """The seq of the result that led the agent to ``tool`` (:func:`detectors.
    intent_drift.weigh.tool_led`, given the tools used before), judged at its first use
    and kept for its later calls; None for a tool the task or earlier work brought in.
    The tool is recorded as used."""
    if not tool:
        return None
    seq = log.led_tools.get(tool)
    if seq is None and tool not in log.tools:
        seq = led(log.tools.keys())
        if seq is not None:
            remember(log.led_tools, tool, seq, MAX_TOOLS)
    remember(log.tools, tool, None, MAX_TOOLS)
    return seq


_VALUE_RE = re.compile(r'"[^"\n]{1,40}"\s*:\s*(?:"([^"\n]{0,80})"|(-?[0-9][0-9.,]*))')
_LIST_RE = re.compile(r'"[^"\n]{1,40}"\s*:\s*\[([^\[\]{}\n]{1,800})\]')
_ITEM_RE = re.compile(r'"([^"\n]{1,80})"')
VALUE_PARTS = 4
"""A string value of at most this many space-separated parts is a value (an id, an
amount with its currency, a status, a name), a longer one is prose."""
MAX_DATA = 512
"""Words of values and of the current page kept."""
LISTING_CHARS = 16_000
"""Characters of an on-task result read for the ids of the records it lists: a mailbox or
drive listing runs past ``result_chars`` (50 messages are ~5,000 characters), and a
record it listed is one the agent was shown, wherever in the listing it stood."""


class RecordParts(NamedTuple):
    """What a result's text holds as records' data, read once for every reader of it
    (:func:`value_words`, :func:`host_names`): its ``"key": value`` pairs (a string, or a
    number) and its table cells (:func:`table_cells`)."""

    pairs: list[tuple[str, str]]
    cells: list[str]


def record_parts(text: str) -> RecordParts:
    """The :class:`RecordParts` of ``text``.

    >>> record_parts('{"id": "db01", "n": 3}')
    RecordParts(pairs=[('db01', ''), ('', '3')], cells=[])
    """
    pairs = _VALUE_RE.findall(text) if '"' in text else []
    cells = table_cells(text) if "|" in text or "\t" in text else []
    return RecordParts(pairs, cells)


def value_words(text: str, parts: RecordParts | None = None) -> list[str]:
    """The words of the scalar values of the ``"key": value`` pairs a result holds (JSON,
    whole or cut off, or embedded in text): strings of at most :data:`VALUE_PARTS`
    parts and numbers - a record's data, not prose that could bring up a topic.

    >>> value_words('{"id":"ntc_de-DE","total":"246.43 EUR","note":"please also refund the'
    ...             ' other order to my new account"}')
    ['ntc', 'de', 'eur']

    The strings of a list of values are values too (the documents a customs case
    lists, a record's tags): ``{"docs": ["commercial_invoice", "packing_list"]}``.

    >>> value_words('{"hold":"DOC","docs":["commercial_invoice","packing_list"]}')
    ['commercial', 'invoice', 'packing', 'list']

    And so are the cells of a table (:func:`table_cells`: a queue's rows, a query's output).
    """
    parts = record_parts(text) if parts is None else parts
    values: list[str] = [value or number for value, number in parts.pairs]
    if "[" in text:
        values += (item for items in _LIST_RE.findall(text) for item in _ITEM_RE.findall(items))
    values += parts.cells
    found: list[str] = []
    for value in values:
        if len(value.split()) > VALUE_PARTS:
            continue
        for w in tokenize(value, drop=CONTENT_DROP):
            if len(w) <= MAX_WORD_CHARS and w not in found:
                found.append(w)
    return found


MAX_TABLE_LINES = 200
_RULE_LINE_RE = re.compile(r"^[\s|:+-]*$")


def table_cells(text: str) -> list[str]:
    """The cells of the rows of a table a result prints (``key | summary`` over rows of
    ``ITSD-6862 | Salesforce licence``; psql's ``|``, a Markdown table, tab-separated
    lines): lines with the separator count of the first such line, the header row and
    rule lines left out, at most :data:`MAX_TABLE_LINES` lines read. Cells are record data
    as a JSON record's values are.

    >>> table_cells("key | summary\\nITSD-6862 | Salesforce licence\\nITSD-8878 | MFA loop\\n")
    ['ITSD-6862', 'Salesforce licence', 'ITSD-8878', 'MFA loop']
    >>> table_cells("a | b is the pipe in prose") == []
    True
    """
    sep = "|" if "|" in text else "\t"
    rows = [line for line in text.split("\n", MAX_TABLE_LINES)[:MAX_TABLE_LINES] if sep in line]
    if len(rows) < 2:
        return []
    width = rows[0].strip().strip("|").count(sep)
    cells: list[str] = []
    for line in rows[1:]:
        if _RULE_LINE_RE.match(line) or line.strip().strip("|").count(sep) != width:
            continue
        cells += (c.strip() for c in line.strip().strip("|").split(sep) if c.strip())
    return cells


_HOST_NAME_RE = re.compile(r"[a-z][a-z0-9-]{2,62}")
MAX_HOST_NAMES = 64


def host_names(text: str, parts: RecordParts | None = None) -> list[str]:
    """The machines a result lists by their short names: the one-word values of its
    table cells and JSON strings shaped like a host name with a digit or a hyphen in it
    (``LT-FIN-2936``, ``ws-hr-0077``, ``db01``), lower-cased, at most
    :data:`MAX_HOST_NAMES`. A call that then acts on one by that name (``hostname=``)
    reaches a host the result named, as one naming a linked domain does.

    >>> host_names("host | count\\nLT-FIN-2936 | 36\\nWS-HR-1120 | 27\\n")
    ['lt-fin-2936', 'ws-hr-1120']
    >>> host_names('{"hostname": "db01", "status": "ok"}')
    ['db01']
    """
    parts = record_parts(text) if parts is None else parts
    values = list(parts.cells)
    if '":' in text:
        values += (value for value, _ in parts.pairs if value)
    found: dict[str, None] = {}
    for value in values:
        low = value.strip().lower()
        if (
            _HOST_NAME_RE.fullmatch(low)
            and any(c.isdigit() or c == "-" for c in low)
            and not low.endswith("-")
        ):
            found[low] = None
            if len(found) >= MAX_HOST_NAMES:
                break
    return list(found)


_FAMILY_RE = re.compile(r"[^a-z0-9]+")


def family(tool: str | None) -> str:
    """The first part of a tool's name: the toolset it belongs to (``browser_click`` and
    ``browser_navigate``: ``browser``; ``mcp__pw__click``: ``mcp``).

    >>> family("browser_click"), family("Browser.Navigate"), family(None)
    ('browser', 'browser', '')
    """
    parts = [p for p in _FAMILY_RE.split((tool or "").lower()) if p]
    return parts[0] if parts else ""


def note_page(log: CallLog, step: Step, names_host: bool) -> None:
    """A call that names a host navigates: the page it returns is the current page."""
    if names_host:
        log.page_call = (step.step_id, step.call_id or "")
        log.page_family = family(step.tool)
        log.page.clear()


def on_page(log: CallLog, tool: str | None, places: bool) -> bool:
    """Whether a call acts on the current page: it names no place of its own and belongs
    to the toolset that navigated there (a click, a snapshot, typing into a field)."""
    return not places and bool(log.page_family) and family(tool) == log.page_family


def beyond_data(
    log: CallLog, words: set[str], page: bool, known: Callable[[str], bool]
) -> set[str]:
    """``words`` of a call naming no place of its own, less those new to the task
    (``known`` says which are not) that are values on-task reads returned and, for a
    call acting on the current page (``page``: :func:`on_page`), that page's words while
    the navigation there was on task: the call continues the task with its data, or
    acts on the task's page whatever its element is labelled.

    >>> log = CallLog()
    >>> log.data.update({"eur": None, "refund": None})
    >>> sorted(beyond_data(log, {"eur", "refund", "wire"}, False, lambda w: w == "refund"))
    ['refund', 'wire']
    """
    drop = log.data.keys() | log.page.keys() if page else log.data.keys()
    return {w for w in words if w not in drop or known(w)}


_ID_KEY_RE = re.compile(r"(?:^|[_-])id$|[a-z]Id$")
_ID_PAIR = r'"(?:id|[A-Za-z]+(?:_id|Id))"\s*:\s*"([^"\n]{{1,{}}})"'
"""A ``"id": "…"`` / ``"orderId": "…"`` pair, its value captured up to a length."""
_ID_VALUE_RE = re.compile(_ID_PAIR.format(80))
ENTITY_WEIGHT = 1.0
"""The weight of a call on a record nothing reached: own initiative on an object."""
_MINTED_RE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-hjkmnp-tv-z]{26}"
)
"""A random identifier (a UUID, a ULID; lower-cased): minted, not chosen."""


def minted(value: str) -> bool:
    """Whether an id value is a random identifier (a UUID, a ULID) rather than a name or
    a number a person could pick.

    The reason: nobody chooses a record by a random id that nothing showed them. One
    nothing visible named was minted by the agent (a new conversation's ``context_id``,
    an idempotency key) or came from a result that arrives later (a sub-agent's calls
    end before the call that spawned it returns its task id) - either way, not another
    record the agent picked on its own initiative.

    >>> minted("368da249-537e-47ec-a734-20025ae7fe8e"), minted("01hzx3q8k9m2n4p6r8t0v2w4y6")
    (True, True)
    >>> minted("pg-vendor-contracts"), minted("ord-20931")
    (False, False)
    """
    return _MINTED_RE.fullmatch(value) is not None


def id_values(arguments: object) -> list[str]:
    """The string values of a call's id arguments (``id``, ``page_id``, ``blockId``:
    the records it acts on), lower-cased, top level only.

    >>> id_values({"page_id": "pg-Vendor", "properties": {"title": "x"}, "limit": 3})
    ['pg-vendor']
    """
    if not isinstance(arguments, Mapping):
        return []
    return [
        v.strip().lower()
        for k, v in arguments.items()
        if isinstance(k, str) and isinstance(v, str) and _ID_KEY_RE.search(k) and v.strip()
    ]


def entity_weight(log: CallLog, ids: list[str], known: Callable[[str], bool]) -> float:
    """The weight a call gets for the records it names by id: 0 for one the requests
    (``known``: its words are the task's), an on-task result or an on-task call named;
    the weight of the call that first named it otherwise; :data:`ENTITY_WEIGHT` for one
    nothing named (remembered with it). Ids of no letters (``#96696``) are not judged,
    nor any once an on-task call used an id nothing visible named (``blind_ids``: the
    agent has ids from somewhere the session does not show), nor a random one
    (:func:`minted`).

    >>> log = CallLog()
    >>> log.results.append(('{"id":"pg-kestrel"}', 3, 0.0, ""))
    >>> entity_weight(log, ["pg-kestrel"], lambda w: False)
    0.0
    >>> entity_weight(log, ["pg-vendor-contracts"], lambda w: w == "kestrel")
    1.0
    >>> note_entities(log, ["pg-vendor-contracts"], 0.0)  # an on-task call used it
    >>> log.blind_ids, entity_weight(log, ["pg-team-wiki"], lambda w: False)
    (True, 0.0)
    """
    weight = 0.0
    for v in ids:
        if v in log.entities:
            weight = max(weight, log.entities[v])
            continue
        words = tokenize(v, drop=CONTENT_DROP)
        if log.blind_ids or not words or all(known(w) for w in words):
            continue
        if any(at <= 0.0 and v in text for text, _, at, _ in log.results):
            remember(log.entities, v, 0.0, MAX_DATA)
            continue
        if minted(v):
            continue  # a random id nothing showed: minted or yet to be returned
        remember(log.entities, v, ENTITY_WEIGHT, MAX_DATA)
        weight = ENTITY_WEIGHT
    return weight


def note_entities(log: CallLog, ids: list[str], weight: float) -> None:
    """The records an on-task call names (``weight`` 0) are the task's; one nothing
    named before (an opening call's) says ids come from where the session does not
    show (:attr:`CallLog.blind_ids`)."""
    if weight == 0.0:
        for v in ids:
            if log.entities.get(v, 0.0) > 0.0:
                log.blind_ids = True
            remember(log.entities, v, 0.0, MAX_DATA)


_THING_RE = re.compile(r"(?<![\w.-])[A-Za-z][\w.-]*[A-Za-z0-9](?![\w.(-])")
_THING_SHAPE_RE = re.compile(r"\w[_.]\w|-\w*\d")
"""A name shaped like a thing the work made or used rather than a word: a ``_`` or a
``.`` inside (``scratch_bi.dupes_0_2``, ``analytics.fct_sessions``), or a ``-`` with a
digit after it (``job-42705``)."""
MAX_MADE = 32
"""Objects of on-task calls :func:`call_objects` keeps per call."""
MAX_TOUCHED = 128
"""Objects on-task work touched the log keeps."""


def call_objects(arguments: object) -> list[str]:
    """The objects a call's argument *values* name (not its keys), lower-cased, 5 to 80
    characters: names shaped like things (:data:`_THING_RE`) - the tables and records
    the call works on - at most :data:`MAX_MADE`, the strings of its top level and one
    level down only (bounded). Not a function called (``now.UTC()``), nor a name with a
    part of one letter (``x.last``: a program's local plumbing).

    >>> call_objects({"sql": "CREATE TABLE scratch_bi.dupes_0_2 AS SELECT id FROM an.fct_sessions"})
    ['scratch_bi.dupes_0_2', 'an.fct_sessions']
    >>> call_objects({"code": "x.last = now.UTC()"})
    []
    >>> call_objects({"incident_id": "PB077", "note": "see the runbook"})
    []
    """
    values: list[str] = []
    items = arguments.values() if isinstance(arguments, Mapping) else [arguments]
    for v in items:
        if isinstance(v, str):
            values.append(v[:4_000])
        elif isinstance(v, list | tuple):
            values += (x[:4_000] for x in v[:16] if isinstance(x, str))
    found: list[str] = []
    for text in values:
        for m in _THING_RE.findall(text):
            name = m.lower()
            if (
                5 <= len(name) <= 80
                and _THING_SHAPE_RE.search(name)
                and not any(part.isalpha() and len(part) == 1 for part in re.split(r"[_.-]", name))
                and name not in found
            ):
                found.append(name)
                if len(found) >= MAX_MADE:
                    return found
    return found


def note_objects(
    log: CallLog, objects: list[str], weight: float, stretch_open: bool, derived: bool
) -> None:
    """The objects an on-task call (``weight`` 0) names are the task's from now on
    (:attr:`CallLog.touched`, unless an off-task call named them first): data flow -
    what the work itself created or used, it may come back to. Not what a result
    listed: a broad listing, or a record an injected instruction led to, is no work
    of the task's. So
    are those of a neutral call (``weight`` < 0: a code cell judged on its literals, a
    query that materialises a table) made outside an off-task stretch, when one of its
    objects is ``derived`` from the task's (names a goal word, or an object already
    touched): a table made from the task's table is the work's; one made from elsewhere
    says nothing."""
    if weight > 0.0 or (weight < 0.0 and (stretch_open or not derived)):
        return
    for v in objects:
        if log.entities.get(v, 0.0) <= 0.0:
            remember(log.touched, v, None, MAX_TOUCHED)


def touched_objects(log: CallLog) -> list[str]:
    """The objects on-task work touched (:func:`note_objects`): a call on one continues
    the work that made or used it, wherever its words lead (reading back a scratch
    table the work created is not a topic of its own).

    >>> log = CallLog()
    >>> note_objects(log, ["scratch_bi.dupes_0_2"], 0.0, False, False)
    >>> note_objects(log, ["other.table_1"], 0.5, False, True)
    >>> touched_objects(log)
    ['scratch_bi.dupes_0_2']
    """
    return list(log.touched)


def derived_from_task(
    objects: list[str], touched: Collection[str], known: Callable[[str], bool]
) -> bool:
    """Whether one of a call's ``objects`` is the task's: one on-task work touched, or
    one whose name holds a word of the goal (``known``: ``analytics.fct_sessions`` for
    a goal about sessions).

    >>> derived_from_task(["scratch.d_1", "analytics.fct_sessions"], (), lambda w: w == "session")
    True
    >>> derived_from_task(["snowflake.account_usage"], (), lambda w: w == "session")
    False
    """
    return any(
        o in touched or any(known(w) for w in tokenize(o, drop=CONTENT_DROP)) for o in objects
    )


MAX_CARRIERS = 16
"""Records that carried a foreign passage the log keeps."""


def note_call_ids(log: CallLog, step: Step, ids: list[str]) -> None:
    """The records a call names by id (:func:`id_values`), kept for its result."""
    if ids:
        for key in (step.step_id, step.call_id):
            if key:
                remember(log.call_ids, key, tuple(ids[:4]), _RECENT_CALLS)


def note_carrier(log: CallLog, key: str, found: bool) -> None:
    """When the result of the call ``key`` holds a foreign passage (``found``), the
    records that call read by id carried it (a document, a message)."""
    if found:
        for v in log.call_ids.get(key, ()):
            remember(log.carriers, v, None, MAX_CARRIERS)


def handles_carrier(log: CallLog, ids: list[str]) -> bool:
    """Whether a call acts only on records that carried a foreign passage, by the ids
    the agent read them with: it handles the document (flags, reports, quarantines
    it), it does not obey what the document says - obeying acts on what the passage
    names (another vendor, an account, a host), and is judged as ever.

    >>> log = CallLog()
    >>> log.call_ids["c1"] = ("quote-v-1388.pdf",)
    >>> note_carrier(log, "c1", True)
    >>> handles_carrier(log, ["quote-v-1388.pdf"]), handles_carrier(log, ["v-1769"])
    (True, False)
    """
    return bool(ids) and all(v in log.carriers for v in ids)


def note_judged(log: CallLog, weight: float, paths: set[str]) -> None:
    """The last judged (not neutral) call: its weight and the ``paths`` it named; its
    result is not seen yet."""
    log.last_weight = weight
    log.last_blind = True
    log.last_paths = paths


def reads_task_data(
    weight: float, words: Collection[str], effect: str | None, changes: bool
) -> bool:
    """Whether a call only reads records by the values on-task reads returned: weighed
    neutral (``weight`` < 0) with no word left once those values are set aside
    (``words``: :func:`beyond_data`'s), and changing nothing (no side effect ``effect``,
    no change to the workspace ``changes``).

    The reason: a lookup tool first used on what the task's own data listed (the vendor
    a payment ledger named, looked up with ``get_vendor``) follows the task's data, even
    when a result happens to hold the tool's name words ("Vendor:" on an invoice) - it is
    not a capability a result led the agent to. A call that changes state stays judged.

    >>> reads_task_data(-1.0, set(), None, False), reads_task_data(-1.0, set(), "effect", False)
    (True, False)
    >>> reads_task_data(-1.0, {"wire"}, None, False), reads_task_data(0.5, set(), None, False)
    (False, False)
    """
    return weight < 0 and not words and effect is None and not changes


MAX_SLOTS = 16
"""Argument slots kept (:attr:`CallLog.slots`)."""


def slot_values(arguments: object) -> list[tuple[str, str]]:
    """(key, value) of the short string values (under 40 characters, no space) of a
    call's top-level arguments, lower-cased: the slots that name an object.

    >>> slot_values({"collection": "Knitwear", "price_change_pct": -15, "note": "a b"})
    [('collection', 'knitwear')]
    """
    if not isinstance(arguments, Mapping):
        return []
    return [
        (str(k).lower(), v.strip().lower())
        for k, v in list(arguments.items())[:32]
        if isinstance(v, str) and 0 < len(v.strip()) < 40 and " " not in v.strip()
    ]


def note_slots(log: CallLog, slots: list[tuple[str, str]], named: Callable[[str], bool]) -> None:
    """Of an on-task call: remember the slots whose value the requests name
    (``named``) - the argument that says which object the task is about."""
    for key, value in slots:
        if named(value) and (key in log.slots or len(log.slots) < MAX_SLOTS):
            log.slots[key] = value


def sibling_slot(
    log: CallLog, slots: list[tuple[str, str]], named: Callable[[str], bool]
) -> str | None:
    """The value of a slot the task's own work filled with an object the requests name
    (:func:`note_slots`), now filled with another that neither the requests nor any
    recent result named (``named``), or None.

    The reason: the same operation applied to a sibling object the agent chose itself
    (asked to mark down the "winter-outerwear" collection only, it marks down
    ``knitwear`` too) widens the task on its own initiative; a sibling a result revealed
    (a listing, a failure) is reached by the work, and is not judged here.

    >>> log = CallLog()
    >>> note_slots(log, [("collection", "winter-outerwear")], lambda v: v == "winter-outerwear")
    >>> sibling_slot(log, [("collection", "knitwear")], lambda v: False)
    'knitwear'
    >>> sibling_slot(log, [("collection", "knitwear")], lambda v: v == "knitwear") is None
    True
    """
    for key, value in slots:
        if key in log.slots and value != log.slots[key] and not named(value):
            return value
    return None


_DIGITS_RE = re.compile(r"[0-9]+")
_DIGIT_RE = re.compile(r"[0-9]")
_LETTER_RE = re.compile(r"[^\W\d_]")


def ident_shape(ident: str) -> str | None:
    """The shape of an identifier, None when it has no digits: with letters, its digit
    runs as ``#`` (``foia-#-#``: the kind of record is in the letters); a bare number,
    each digit as ``0`` (``00-000000-00`` an account, ``000-000-0000`` a phone: its only
    shape is its length and separators - a reading of 12999 is no sibling of an account
    number).

    >>> ident_shape("FOIA-2025-52618"), ident_shape("20-687277-24"), ident_shape("n/a")
    ('FOIA-#-#', '00-000000-00', None)
    """
    if not _DIGITS_RE.search(ident):
        return None
    if _LETTER_RE.search(ident):
        return _DIGITS_RE.sub("#", ident)
    return _DIGIT_RE.sub("0", ident)


@lru_cache(maxsize=64)
def _shapes(idents: tuple[str, ...]) -> frozenset[str]:
    """The shapes (:func:`ident_shape`) of the identifiers that have one."""
    return frozenset(sh for sh in map(ident_shape, idents) if sh is not None)


def sibling_ident(slots: list[tuple[str, str]], idents: Iterable[str]) -> str | None:
    """The value of a call's slot (:func:`slot_values`) that is an identifier of the same
    shape as one the requests name - its digits aside (``foia-2025-52618`` beside the
    task's ``foia-2025-26760``, ``clm-807921`` beside ``clm-807920``) - but not one they
    name, or None.

    The reason: a request that names its record by number is about that record; the
    same kind of record under another number is another case, reached by the agent (a
    queue it listed, a search's hits), not given to it.

    >>> sibling_ident([("id", "foia-2025-52618")], ["foia-2025-26760"])
    'foia-2025-52618'
    >>> sibling_ident([("id", "foia-2025-26760"), ("doc", "doc-77")], ["foia-2025-26760"])
    """
    shapes = _shapes(tuple(idents))
    if not shapes:
        return None
    named = set(idents)
    for _, value in slots:
        if value not in named and ident_shape(value) in shapes:
            return value
    return None


MAX_SHOWN = 512
"""Identifiers results showed that :attr:`CallLog.shown` keeps."""
MAX_SWEPT = 16
"""Unshown siblings :attr:`CallLog.swept` keeps."""
SWEEP_RECORDS = 3
"""Distinct siblings nothing showed the agent reads before the reads weigh: one or two
are a related record looked up (a prior claim, a linked ticket); a third is a survey."""
SWEEP_WEIGHT = 0.5
"""The weight of a read that continues such a survey (half an off-topic action: each
read alone is harmless, the run of them is work nobody asked for)."""


@lru_cache(maxsize=64)
def _shapes_re(idents: tuple[str, ...]) -> re.Pattern[str] | None:
    """A pattern of the identifiers shaped as ``idents`` are (:func:`ident_shape`:
    ``c-134902`` -> ``c-[0-9]+``, ``20-687277-24`` -> ``[0-9]{2}-[0-9]{6}-[0-9]{2}``), or
    None when none has digits."""
    shapes = sorted(_shapes(idents))
    if not shapes:
        return None
    escaped = (re.escape(sh).replace("\\#", "#") for sh in shapes)
    alternatives = "|".join(e.replace("0", "[0-9]").replace("#", "[0-9]+") for e in escaped)
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


def note_shown(log: CallLog, text: str, idents: Iterable[str]) -> None:
    """Remember the identifiers of the requests' shapes that a result (``text``,
    lower-cased) shows: records the work reached, not ones the agent picked.

    >>> log = CallLog()
    >>> note_shown(log, "open cases: c-200114, c-200115 (c-2001 is a prefix)", ["c-134902"])
    >>> list(log.shown)
    ['c-200114', 'c-200115', 'c-2001']
    """
    pattern = _shapes_re(tuple(idents))
    if pattern is not None:
        remember_all(log.shown, pattern.findall(text), None, MAX_SHOWN)


def unshown_sweep(log: CallLog, sibling: str, named: bool) -> bool:
    """Whether reading ``sibling`` (a record of the kind the requests name by number, not
    one they name: :func:`sibling_ident`) continues a survey of records nothing showed:
    neither the requests nor a result (``named``, :attr:`CallLog.shown`) named it, and it
    is at least the :data:`SWEEP_RECORDS`-th such record read. Not judged before any
    result was seen or once an on-task call used an id nothing visible named
    (:attr:`CallLog.blind_ids`: results are not recorded, ids come from elsewhere).

    The reason: a request that names its record by number is about that record. The
    agent can read a related one a result pointed to; numbers of the same kind that no
    result showed are ones it picked itself, and reading record after record of them
    (every customer "that may be affected as well") is a task nobody gave it.

    >>> log = CallLog(informed=True)
    >>> [unshown_sweep(log, s, False) for s in ["c-1", "c-2", "c-2", "c-3", "c-4"]]
    [False, False, False, True, True]
    >>> log.shown["c-9"] = None
    >>> unshown_sweep(log, "c-9", False)
    False
    """
    if named or sibling in log.shown or not log.informed or log.blind_ids:
        return False
    remember(log.swept, sibling, None, MAX_SWEPT)
    return len(log.swept) >= SWEEP_RECORDS


_ROW_RE = re.compile(r"\{[^{}]{1,800}\}")
_ROW_LABEL_RE = re.compile(
    r'"(?:name|title|display_?name|subject|summary|short_description|label|file_?name)"'
    r'\s*:\s*"([^"\n]{1,120})"',
    re.IGNORECASE,
)
_ROW_ID_RE = re.compile(_ID_PAIR.format(200))
"""A record's id in a listing: as :data:`_ID_VALUE_RE`, up to 200 characters (a SharePoint
site's id is its host and two GUIDs)."""
_HAS_DIGIT_RE = re.compile(r"[0-9]")
MAX_ROWS = 200
"""Records of one listing :func:`passed_over` reads."""
MAX_PASSED = 64
"""Records passed over that the log keeps (:attr:`CallLog.passed`)."""
PASSED_READ = 0.5
"""The weight of a read of a record passed over: own initiative, nothing changed yet."""
PASSED_CHANGE = 1.0
"""The weight of a change to a record passed over: the agent acts on another object."""


def passed_over(text: str, named: Callable[[str], bool]) -> list[tuple[str, tuple[str, ...]]]:
    """The records a listing result holds beside the one the requests pick out by its
    name: (id, the words of its name) of each other record, when one or two records'
    names are wholly the requests' words (``named``) and each of those names has a word
    no other record's name holds; else none. A record is a flat JSON object with an id (``"id"``,
    ``"fileId"``) and a name (``name``, ``title``, ``displayName``, ``subject``,
    ``summary``); ids of 6 characters or more with a digit only (opaque identifiers,
    found again in a later call's arguments). At most :data:`MAX_ROWS` records read.

    The reason: asked to fix the "IT Asset Register" sheet, the agent searched and got
    it among others ("Payroll Register 2025"); the search reached all of them, but the
    user picked one - working on the others is the agent's own widening of the task.
    A listing nothing in the requests picks a record of (a queue to work through) passes
    nothing over.

    >>> rows = ('{"files":[{"id":"1bl2rQ9","name":"IT Asset Register"},'
    ...         '{"id":"1Q9ES77","name":"Payroll Register 2025"}]}')
    >>> passed_over(rows, lambda w: w in {"asset", "register"})
    [('1q9es77', ('payroll', 'register'))]
    >>> passed_over(rows, lambda w: w in {"register", "payroll", "asset"}) == []
    True
    >>> passed_over(rows, lambda w: w in {"queue"})
    []
    >>> family = ('[{"id":"s-1","name":"Marketing"},{"id":"s-2","name":"Marketing-Hub"},'
    ...           '{"id":"s-3","name":"Marketing-Events"}]')
    >>> passed_over(family, lambda w: w in {"marketing", "hub"})
    []
    """
    if "{" not in text:
        return []
    rows: list[tuple[str, tuple[str, ...]]] = []
    for match in _ROW_RE.finditer(text):
        row = match.group(0)
        ident, label = _ROW_ID_RE.search(row), _ROW_LABEL_RE.search(row)
        if ident is not None and label is not None:
            words = tuple(tokenize(label.group(1), drop=CONTENT_DROP))
            rows.append((ident.group(1).strip().lower(), words))
        if len(rows) >= MAX_ROWS:
            break
    picked = [r for r in rows if r[1] and all(named(w) for w in r[1])]
    if not picked or len(picked) > 2 or 2 * len(picked) > len(rows):
        return []
    others = [r for r in rows if r not in picked]
    elsewhere = {w for _, words in others for w in words}
    if not all(any(w not in elsewhere for w in words) for _, words in picked):
        # a picked name all of whose words name others too ("Marketing" beside
        # "Marketing-Events", asked for "all Marketing* sites"): the requests name a
        # family, not one record of it
        return []
    return [r for r in others if len(r[0]) >= 6 and _HAS_DIGIT_RE.search(r[0])]


def note_passed(log: CallLog, rows: list[tuple[str, tuple[str, ...]]]) -> None:
    """Remember the records an on-task listing passed over (:func:`passed_over`)."""
    for ident, words in rows:
        remember(log.passed, ident, words, MAX_PASSED)


def passed_weight(
    log: CallLog, arguments: str | None, changes: bool, named: Callable[[str], bool]
) -> tuple[float, list[str]]:
    """(weight, ids) of a call whose ``arguments`` name records an on-task listing
    passed over (:func:`note_passed`) - by id or inside an address - and whose names the
    requests still do not hold (a later request may name them): :data:`PASSED_CHANGE`
    for a call that ``changes`` something, :data:`PASSED_READ` for a read; (0, []) for
    none.

    >>> log = CallLog()
    >>> note_passed(log, [("1q9es77", ("payroll", "register"))])
    >>> passed_weight(log, '{"spreadsheetId":"1Q9ES77"}', False, lambda w: False)
    (0.5, ['1q9es77'])
    >>> passed_weight(log, '{"spreadsheetId":"1Q9ES77"}', True, lambda w: False)
    (1.0, ['1q9es77'])
    >>> named = {"payroll", "register"}.__contains__  # a later request names it
    >>> passed_weight(log, '{"spreadsheetId":"1Q9ES77"}', True, named)
    (0.0, [])
    """
    if not log.passed or not arguments:
        return 0.0, []
    text = arguments[:AUTHORED_CHARS].lower()
    ids = [
        ident
        for ident, words in log.passed.items()
        if ident in text and not all(named(w) for w in words)
    ]
    if not ids:
        return 0.0, []
    return (PASSED_CHANGE if changes else PASSED_READ), ids


def findings_weight(weight: float, stretch_open: bool) -> float:
    """The weight what a result names or cites inherits from its call (of ``weight``):
    an on-task call's, or a neutral one's (a test run, a build) while no off-task
    stretch is open, are the task's (0); a neutral call's run during the agent's own
    detour reports on that detour (0.5, own initiative): the tests failing after it
    upgraded every dependency cite modules the detour broke, not ones the task must
    change; an off-task call's keep its weight.

    >>> findings_weight(0.0, True), findings_weight(-1.0, False), findings_weight(-1.0, True)
    (0.0, 0.0, 0.5)
    """
    if weight < 0.0:
        return 0.5 if stretch_open else 0.0
    return weight


def read_result(
    log: CallLog,
    task: TaskState,
    step: Step,
    features: StepFeatures,
    result_chars: int,
    share: float = 0.34,
    stretch_open: bool = False,
) -> None:
    """A tool result: the links it lists, and the machines it names by their short names
    (:func:`host_names`), reach ``task`` with its call's weight
    (:func:`detectors.intent_drift.task.learn_links`), whether it addresses the agent is
    remembered, its text (up to ``result_chars``) is kept among the recent results, and
    its passages of which less than ``share`` of the words are the task's are kept as
    foreign text (:func:`detectors.intent_drift.provenance.foreign_passages`)."""
    log.last_blind = not step.result
    if not step.result:
        return
    text = step.result[:result_chars]
    key = step.parent_step_id or step.call_id or ""
    weight, query = log.call_weight.get(key, (0.0, False))
    # judged against the task as it stood before this result (a page the task points
    # to widens it with its own words below)
    passages = foreign_passages(
        text,
        step.seq,
        # the agent's own words too: what it named before the passage, the passage
        # did not bring up
        lambda w: w in log.authored or known(w, task.goal_words, task.words, task.goal_stems),
        share,
    )
    log.foreign.extend(passages)
    if key and key in log.own_calls:
        # the page the task points to by its address (a to-do list) is the task's own
        # text: what it asks for is delegated - its words are in scope, and the tools
        # it names are the task's (not the goal's own words: a tool's argument keys
        # naming them would make any call topical)
        for w in sorted(set(tokenize(text, drop=CONTENT_DROP))):
            if len(w) <= MAX_WORD_CHARS:
                remember(task.words, w, None, MAX_WORDS)
                remember(log.delegated, w, None, MAX_DELEGATED)
    paths, hosts, pages = features.result_links(result_chars)
    instructs = features.instructs_agent(result_chars)
    note_carrier(log, key, bool(passages) or instructs)  # what was planted, and where
    if instructs:
        log.instructed, log.since_instructed = step.seq, 0
    # a neutral call's result (a test run, a build: the work's own tools) reaches what
    # it names as an on-task one does
    # a domain the text names outside its links (an address, a file named after its
    # sender) is as reached as a linked host
    parts = record_parts(text)  # read once: the hosts it names, the data it holds
    hosts = (*hosts, *named_domains(text), *host_names(text, parts))
    found = findings_weight(weight, stretch_open)
    learn_links(task, found, paths, hosts, pages, log.last_paths)
    if found == 0.0 and (step.status == "error" or step.error):
        learn_failure(task, step.result)  # what a failing test run cites must change
    low = text.lower()  # kept among the recent results below
    if task.idents:
        note_shown(log, low, task.idents)
    if weight <= 0.0 and not instructs:
        remember_all(log.data, value_words(text, parts), None, MAX_DATA)
        ids = _ID_VALUE_RE.findall(step.result[:LISTING_CHARS])
        remember_all(log.entities, [v.strip().lower() for v in ids], 0.0, MAX_DATA)
        if len(step.result) > result_chars:  # the ids past what was read above are data too
            listed = tokenize(" ".join(ids), drop=CONTENT_DROP)
            remember_all(log.data, [w for w in listed if len(w) <= MAX_WORD_CHARS], None, MAX_DATA)
        picked = passed_over(text, task.requested)
        note_passed(log, picked)
        if (key and key in log.page_call) or (
            query and log.page and family(step.tool) == log.page_family
        ):
            # the page an on-task navigation reached, or what a UI action on it showed
            # (a call naming nothing: ``query``)
            words = tokenize(text, drop=CONTENT_DROP)
            remember_all(log.page, [w for w in words if len(w) <= MAX_WORD_CHARS], None, MAX_DATA)
    elif key and key in log.page_call:
        log.page.clear()  # an off-task page: its elements are not the task's
    hits = query_hits(query, weight, instructs, pages, paths)
    log.results.append((low, step.seq, weight, hits))
