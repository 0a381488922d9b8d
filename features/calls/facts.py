"""What a tool call says about where it goes, before any session state is consulted.

Contract: pure functions of a call's tool name, arguments text and ``detail["egress"]``
(:mod:`features.egress.targets`). :func:`call_facts` is memoised: the lower-cased arguments,
the working directory's name, git commands and verbs, e-mail addresses, whether it
searches for a benchmark's answers (and the words naming it) or reads the environment,
and whether the tool is a read. :data:`SENDS_RE`, :data:`DATA_METHODS`,
:data:`DATA_VIAS` and :func:`sending_tool` tell a call that carries data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from features.egress.answer_sources import benchmark_words, git_commands, seeks_answers
from features.egress.result_addresses import EMAIL_RE
from features.text.memo import short_text_memo
from models.records import Step

__all__ = [
    "DATA_MCP_METHODS",
    "DATA_METHODS",
    "DATA_VIAS",
    "SENDS_RE",
    "CallFacts",
    "call_facts",
    "read_tool",
    "sending_tool",
    "target_hosts",
]

# Ways of reaching a host that carry data whatever the method.
DATA_VIAS = frozenset(
    {
        "email_recipient",
        "scp",
        "rsync",
        "sftp",
        "nc",
        "telnet",
        "git_push",
        "twine_upload",
        "npm_publish",
    }
)
DATA_METHODS = frozenset({"POST", "PUT", "PATCH"})
DATA_MCP_METHODS = frozenset({"tools/call"})
"""MCP requests that carry the caller's data to the server: a tool call's arguments
(an MCP client span's ``mcp.method.name``; ``tools/list`` or ``ping`` carry none)."""
# Sending data from code or a shell when the extractor could not tell the method.
SENDS_RE = re.compile(
    r"requests\.(?:post|put|patch)|httpx\.(?:post|put|patch)|axios\.(?:post|put)"
    r"|\.post\(|method\W{1,4}(?:post|put|patch)\b|--data|--upload-file|--form|\s-[dft]\s"
    r"|-x\s*(?:post|put|patch)\b|urlopen\([^)]*data="
)  # matched against lower-cased arguments
_SENDING_TOOL_RE = re.compile(
    r"send|post|upload|share|submit|e?mail|pay|transfer|publish|invite|forward|webhook",
    re.IGNORECASE,
)
_READ_TOOL_RE = re.compile(
    r"(?:get|read|search|list|find|query|lookup|view|show|check|browse|visit|open|fetch)"
    r"(?!.*(?:send|post|upload|share|pay|transfer|invite|forward|create|update|delete))",
    re.IGNORECASE,
)
_ENV_RE = re.compile(r"environ|printenv|\benv\b")
_WORKDIR_RE = re.compile(r'"(?:workdir|cwd|working_dir)":"([^"]+)"')
# (lower-cased arguments, working directory name, git commands (verb, rest), their verbs
# joined, e-mail addresses, benchmark words, a precursor, a read tool)
CallFacts = tuple[
    str, str | None, tuple[tuple[str, str], ...], str, tuple[str, ...], tuple[str, ...], bool, bool
]


# Tool calls repeat (polls, retries, loops): their facts are memoised, bounded in
# entries and in size; long arguments (writes, edits) are read uncached.
@short_text_memo(entries=512, max_chars=4096, text=1)
def call_facts(tool: str | None, args: str) -> CallFacts:
    """What a tool call's name and arguments say, before any state is consulted."""
    low = args.lower()
    workdir = None
    if "workdir" in low or "cwd" in low or "working_dir" in low:
        m = _WORKDIR_RE.search(low)
        if m and m.group(1).rstrip("/"):
            workdir = m.group(1).rstrip("/").rsplit("/", 1)[-1]
    git = git_commands(args) if "git" in low else ()
    verbs = " ".join(v for v, _ in git) + (" -v" if "remote -v" in low else "")
    emails = tuple(m.group(0).lower() for m in EMAIL_RE.finditer(args)) if "@" in args else ()
    words: tuple[str, ...] = ()
    # searching for a benchmark's answers (its words name the benchmark), or reading
    # the environment
    if seeks_answers(low):
        precursor = True
        words = benchmark_words(low)
    else:
        precursor = "env" in low and _ENV_RE.search(low) is not None
    reads = read_tool(tool)
    return low, workdir, git, verbs, emails, words, precursor, reads


def target_hosts(step: Step) -> set[str]:
    """The hosts (without ``www.``) a tool call's arguments send traffic to."""
    detail = step.detail
    raw = detail.get("egress") if type(detail) is dict or isinstance(detail, Mapping) else None
    return {
        str(t["host"]).removeprefix("www.")
        for t in (raw if isinstance(raw, list) else ())
        if isinstance(t, Mapping) and isinstance(t.get("host"), str)
    }


@lru_cache(maxsize=256)
def read_tool(tool: str | None) -> bool:
    """Tools whose name says they only read (``get_channels``, ``read_file``,
    ``list_files``, ``search_docs``), and say nothing of sending or changing anything.

    >>> read_tool("get_channels"), read_tool("send_money"), read_tool("bash")
    (True, False, False)
    """
    return bool(tool and _READ_TOOL_RE.match(tool))


def sending_tool(tool: str | None) -> bool:
    """Tools whose name says they send data (``send_email``, ``post_webpage``, …)."""
    return bool(tool and _SENDING_TOOL_RE.search(tool))
