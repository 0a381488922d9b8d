"""What a tool call does to the world outside the agent: its effect class.

:func:`call_effect` reads a call's tool name and arguments (as stored: canonical JSON)
into ``(class, mutation)``: the class is ``money`` (a payment), ``send`` (a message to
someone), ``state`` (a push, deploy or publish: it carries the workspace's state) or
``effect`` (another external effect), else None; ``mutation`` says the call changes the
workspace (an edit, a commit, a redirect: after one, a push carries new state). The
name decides when it can, the command or the HTTP method otherwise.
``duplicate_side_effect`` reads it from the step's features. Pure, memoised.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from features.text.memo import short_text_memo

__all__ = ["call_effect", "delegates", "names_an_action"]

# Tool names whose effect lands on someone else: money and messages (critical). Matched
# against the name's words (:func:`_name_words`: ``postgres__execute_sql`` is "postgres
# execute sql", ``gmailSendMessage`` "gmail send message"), each a whole word with its
# endings: a ``notebook`` books nothing, ``postgres`` posts nothing, ``dropdown`` drops
# nothing.
_ENDINGS = r"(?:s|es|d|ed|ing|ment|ments|er|ers|ion|ions|al|ation|ations)?\b"
_MONEY_RE = re.compile(
    r"\b(?:pay|payout|transfer|send money|charge|refund|purchas(?:e)?|buy|checkout|order"
    r"|invoic(?:e)?|wire|book)" + _ENDINGS
)
_SEND_RE = re.compile(
    r"\b(?:re)?(?:send|e?mail|gmail|messag(?:e)?|sms|notif(?:y|ie|ication)|invit(?:e)?"
    r"|repl(?:y|ie)|forward|tweet|post|comment|shar(?:e)?|publish)" + _ENDINGS
)
# Other effects outside the agent (warn). State-carrying ones are marked below.
_EFFECT_RE = re.compile(
    r"\b(?:deploy|push|releas(?:e)?|upload|creat(?:e)?|delet(?:e)?|remov(?:e)?|drop|cancel"
    r"|merg(?:e)?|submi(?:t|tt|ss)|schedul(?:e)?|reserv(?:e)?|updat(?:e)?|insert|write remote"
    r"|appl(?:y|ie)|provision|destroy|revok(?:e)?|grant)" + _ENDINGS
)
_STATEFUL_RE = re.compile(
    r"\b(?:deploy|push|releas(?:e)?|upload|appl(?:y|ie)|provision|publish)" + _ENDINGS
)
# Side-effecting shell commands: (words, pattern, class); matched against the lower-cased
# command, first match wins. Every match of a pattern contains one of its words, so a
# pattern is tried only where one occurs: ``in`` is ~30x cheaper than a ``\b``-led regex.
_SHELL_EFFECTS: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (("mail", "mutt", "swaks"), re.compile(r"\b(?:sendmail|mailx?|mutt|swaks)\b"), "send"),
    (("comment",), re.compile(r"\bgh\s+(?:issue|pr)\s+comment\b"), "send"),
    (("push",), re.compile(r"\bgit\s+push\b"), "state"),
    (
        ("publish", "twine"),
        re.compile(r"\b(?:npm|pnpm|yarn|cargo|gem)\s+publish\b|\btwine\s+upload\b"),
        "state",
    ),
    (("docker", "helm"), re.compile(r"\bdocker\s+push\b|\bhelm\s+(?:install|upgrade)\b"), "state"),
    (
        ("kubectl",),
        re.compile(r"\bkubectl\s+(?:apply|create|delete|replace|patch|rollout)\b"),
        "state",
    ),
    (
        ("terraform", "pulumi"),
        re.compile(r"\bterraform\s+(?:apply|destroy)\b|\bpulumi\s+up\b"),
        "state",
    ),
    (
        ("create", "merge", "delete", "close"),
        re.compile(r"\bgh\s+(?:pr|issue|release|repo)\s+(?:create|merge|delete|close)\b"),
        "effect",
    ),
    (
        ("curl",),
        re.compile(r"\bcurl\b.*(?:-x\s*(?:post|put|patch|delete)\b|\s-d\s|--data|-f\s|--form)"),
        "effect",
    ),
    (("aws",), re.compile(r"\baws\s+\S+\s+(?:put|create|delete|send|publish|invoke)"), "effect"),
)
# Calls that change the workspace: after one, a push/deploy carries new state.
_MUTATION_TOOL_RE = re.compile(
    r"edit|write|replace|patch|insert|create_file|save|commit|apply_patch|str_replace",
    re.IGNORECASE,
)
_MUTATION_CMD_RE = re.compile(
    r"\bgit\s+(?:commit|merge|rebase|reset|cherry-pick|am|tag|pull)\b|\bsed\s+-i\b|\bnpm\s+version"
    r"|\b(?:mv|cp|rm|touch|tee)\s|[^2&]>\s*[\w./~]|\bpatch\s+-p"
)
# every match of _MUTATION_CMD_RE contains one of these (~0.1 µs a character otherwise)
_MUTATION_WORDS = ("git", "sed", "npm", "mv", "cp", "rm", "touch", "tee", ">", "patch")
_SHELL_TOOL_RE = re.compile(
    r"bash|shell|terminal|command|exec|run|cmd|console|python", re.IGNORECASE
)
_HTTP_TOOL_RE = re.compile(r"http|request|fetch|api|curl|webhook", re.IGNORECASE)
_METHOD_RE = re.compile(r'"method":"(post|put|patch|delete)"', re.IGNORECASE)
_READ_TOOL_RE = re.compile(
    r"^(?:get|read|view|list|search|find|fetch|open|browse|check|query|lookup|show|describe)",
    re.IGNORECASE,
)


_NAME_WORD_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_READ_VERBS = frozenset(
    [
        "get",
        "read",
        "view",
        "list",
        "search",
        "find",
        "fetch",
        "browse",
        "query",
        "lookup",
        "show",
        "describe",
    ]
)
_ACTING_VERBS = frozenset(
    [
        "send",
        "reply",
        "forward",
        "post",
        "publish",
        "notify",
        "invite",
        "share",
        "tweet",
        "comment",
        "sms",
        "create",
        "delete",
        "remove",
        "update",
        "set",
        "put",
        "write",
        "upload",
        "submit",
        "schedule",
        "cancel",
        "move",
        "mark",
    ]
)


def _name_words(name: str) -> str:
    """A tool name's words, lower-cased, joined by spaces (snake, kebab, dotted, camel).

    >>> _name_words("mcp__postgres__execute_sql"), _name_words("gmailSendMessage")
    ('mcp postgres execute sql', 'gmail send message')
    """
    return " ".join(w.lower() for w in _NAME_WORD_RE.findall(name))


def _names_a_read(name: str) -> bool:
    """Whether a tool's name has a reading verb and no acting one among its words
    (``mail_archive_search``, ``gmail_search_messages``, ``email_list``: a search of
    mail, not a message sent; ``slack_post_message`` posts). The nouns ``mail`` and
    ``message`` say what is read.

    >>> [_names_a_read(n) for n in ("mail_archive_search", "gmailSearchMessages",
    ...                             "slack_post_message", "send_email", "email_list")]
    [True, True, False, False, True]
    """
    words = {w.lower() for w in _NAME_WORD_RE.findall(name)}
    return bool(words & _READ_VERBS) and not words & _ACTING_VERBS


@lru_cache(maxsize=256)
def names_an_action(name: str | None) -> bool:
    """Whether a tool's name has an acting verb among its words and no reading one
    (``foia_set_status``, ``ticket_close``... ``markResolved``): the call changes the
    record it names, whatever class :func:`call_effect` gives it.

    >>> [names_an_action(n) for n in ("foia_set_status", "get_status", "foia_queue")]
    [True, False, False]
    """
    if not name:
        return False
    words = {w.lower() for w in _NAME_WORD_RE.findall(name)}
    return bool(words & _ACTING_VERBS) and not words & _READ_VERBS


_HANDOFF_RE = re.compile(r"^(?:transfer|hand_?off)_(?:back_)?to_", re.IGNORECASE)
"""A hand-off to another agent: ``transfer_to_<agent_name>`` is the tool name the OpenAI
Agents SDK and LangGraph's swarm give a hand-off by default (tau-bench's
``transfer_to_human_agents`` too). It moves the conversation, not money or a message."""
_AGENT_KEYS = frozenset(
    ["agent", "agent_name", "agent_id", "subagent", "subagent_type", "coworker", "target_agent"]
)
_BRIEF_KEYS = frozenset(
    ["prompt", "task", "instruction", "instructions", "message", "context", "description"]
)


def delegates(tool: str | None, arguments: object) -> bool:
    """Whether a call hands work to another agent: a hand-off (:data:`_HANDOFF_RE`), or
    arguments naming an agent beside a brief for it - Claude Code's ``Task`` (``prompt``,
    ``subagent_type``), CrewAI's "Delegate work to coworker" (``task``, ``coworker``),
    Magentic-One's orchestrator (``agent``, ``instruction``). Its brief describes work the
    other agent's own calls will do (and be checked as they are made); it is not that work.

    >>> delegates("Task", {"description": "Find", "prompt": "Locate it", "subagent_type": "x"})
    True
    >>> delegates("transfer_to_billing", {}), delegates("send_email", {"to": "a", "message": "b"})
    (True, False)
    """
    if tool and _HANDOFF_RE.match(tool):
        return True
    if not isinstance(arguments, Mapping):
        return False
    keys = {k.lower() for k in arguments if isinstance(k, str)}
    return bool(keys & _AGENT_KEYS) and bool(keys & _BRIEF_KEYS)


_HTTP_VERB_TOOL_RE = re.compile(
    r"(?:https?|api|rest|web)?[_-]?(?:post|put|patch|delete)(?:[_-]?(?:request|json|api))?",
    re.IGNORECASE,
)
"""An HTTP client tool named for its method (``http_post``, ``httpPut``, ``post_request``):
its ``post`` is the method, not a message posted."""
_RPC_METHOD_RE = re.compile(r'"method"\s*:\s*"([A-Za-z][\w./-]{0,80})"')
_RPC_READ_RE = re.compile(r"(?:get|list|read|query|search|describe|fetch|status)(?![a-z])")


def _rpc_read(arguments: str) -> bool:
    """Whether a request body's JSON-RPC method names a read (the A2A ``tasks/get``, MCP's
    ``tools/list``, ``eth_getBalance``): its last segment starts with a reading verb.

    >>> [_rpc_read(a) for a in ('{"json": {"method": "tasks/get"}, "method": "POST"}',
    ...                         '{"method": "eth_getBalance"}', '{"method": "message/send"}')]
    [True, True, False]
    """
    for method in _RPC_METHOD_RE.findall(arguments):
        last = re.split(r"[/._]", method)[-1]
        if _RPC_READ_RE.match(last[:1].lower() + last[1:]) and not last.isupper():
            return True
    return False


@lru_cache(maxsize=256)
def _tool_traits(name: str) -> tuple[str | None, bool, bool, bool]:
    """What a tool's name alone says: (its effect class, a shell tool, an HTTP tool, a
    tool that changes the workspace). Agents use a handful of tool names. A hand-off to
    another agent (:data:`_HANDOFF_RE`) has no effect class; an HTTP tool named for its
    method (:data:`_HTTP_VERB_TOOL_RE`) is an ``effect``, as a write method is."""
    if name and _HANDOFF_RE.match(name):
        return None, False, False, False
    if name and _HTTP_VERB_TOOL_RE.fullmatch(name):
        return "effect", False, True, False
    by_name = None
    if name and not _READ_TOOL_RE.match(name) and not _names_a_read(name):
        words = _name_words(name)
        if _MONEY_RE.search(words):
            by_name = "money"
        elif _SEND_RE.search(words):
            by_name = "state" if _STATEFUL_RE.search(words) else "send"
        elif _EFFECT_RE.search(words) and not _MUTATION_TOOL_RE.search(name):
            by_name = "state" if _STATEFUL_RE.search(words) else "effect"
    return (
        by_name,
        bool(_SHELL_TOOL_RE.search(name)),
        bool(_HTTP_TOOL_RE.search(name)),
        bool(name and _MUTATION_TOOL_RE.search(name)),
    )


# A pure function of the call's text that cost ~20 µs uncached (a dozen regexes); a
# duplicate is by definition the same call again, and loops and retries repeat calls
# (932 distinct among the fixtures' 2,254). So it is memoised, bounded in entries and in
# size: longer arguments (file writes, edits) rarely repeat and are read uncached.
@short_text_memo(entries=1024, max_chars=4096, text=1)
def call_effect(tool: str | None, arguments: str) -> tuple[str | None, bool]:
    """(effect class, changes the workspace) of a call, its arguments read once.

    The class is ``money``/``send``/``state``/``effect`` for a side-effecting call, else
    None: the name decides when it can, the command or the HTTP method otherwise. A
    mutation is an edit, a commit, a redirect: after one, a push carries new state.

    >>> call_effect("send_money", '{"amount": 5}'), call_effect("bash", '{"command": "git push"}')
    (('money', False), ('state', False))
    >>> call_effect("edit_file", '{"path": "a.py"}'), call_effect("read_file", '{"path": "a"}')
    ((None, True), (None, False))
    >>> call_effect("transfer_to_billing_agent", '{"reason": "duplicate charge"}')
    (None, False)
    >>> call_effect("http_post", '{"json": {"method": "tasks/get"}, "method": "POST"}')
    (None, False)
    >>> call_effect("http_post", '{"json": {"method": "message/send"}, "method": "POST"}')
    ('effect', False)
    """
    by_name, shell, http, mutating = _tool_traits(tool or "")
    low = arguments.lower()
    cls = by_name
    if tool and _HANDOFF_RE.match(tool) and '"amount"' in low:
        cls = "money"  # a transfer of an amount, whatever its name says
    if cls is None:
        if shell or '"command"' in low or '"cmd"' in low:
            for words, pattern, effect in _SHELL_EFFECTS:
                if any(w in low for w in words) and pattern.search(low):
                    cls = effect
                    break
        if cls is None and http and _METHOD_RE.search(arguments):
            cls = "effect"
    if cls == "effect" and http and '"method"' in low and _rpc_read(arguments):
        cls = None  # a JSON-RPC read over POST (A2A ``tasks/get``): polling, not an effect
    mutation = mutating or (
        any(w in low for w in _MUTATION_WORDS) and _MUTATION_CMD_RE.search(low) is not None
    )
    return cls, mutation
