"""Shell command lines as words: simple commands, their prefixes, options and operands.

Contract: pure, never raises on any string. :func:`tokenize` splits like POSIX
``shlex`` with operators as their own tokens (whitespace split when quotes are bad);
:func:`simple_commands` cuts tokens at ``;``, ``&&``, ``|``, ``(``…; :func:`strip_prefixes`
takes off ``VAR=value`` assignments and wrappers (``sudo``, ``env``, ``timeout``, …);
:func:`operands` tells a program's positional operands from its option values.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

__all__ = ["MAX_SHELL_CHARS", "operands", "simple_commands", "strip_prefixes", "tokenize"]

MAX_SHELL_CHARS = 16_384
"""Most characters of one command line that are split into shell words. ``shlex`` reads
a character at a time in Python (~5-10 µs each): 64 KB of a quoted blob cost half a
second. A longer command line is a heredoc or a blob on the command line; its head is
parsed, the rest is analysed as text only (URLs in it are still found)."""

_SEPARATORS = frozenset(";&|()<>\n")
_ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = {
    # wrapper: options that take a value (the command follows)
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "env": {"-u", "-C", "-S"},
    "time": {"-f", "-o"},
    "nohup": set(),
    "exec": {"-a"},
    "command": set(),
    "builtin": set(),
    "nice": {"-n"},
    "ionice": {"-c", "-n"},
    "timeout": {"-s", "-k"},
    "stdbuf": {"-i", "-o", "-e"},
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"},
    "watch": {"-n", "-d"},
    "caffeinate": set(),
    "doas": {"-u", "-C"},
}


def tokenize(command: str) -> list[str]:
    """Shell words with operators as their own tokens; whitespace split when quotes are bad.
    Only the first :data:`MAX_SHELL_CHARS` characters are split (a word cut there ends it).

    >>> len(tokenize("echo '" + "x" * 100_000 + "'")[1])
    16379
    """
    command = command[:MAX_SHELL_CHARS]
    if not _NEEDS_SHLEX.search(command):
        # Without quotes, escapes or comments shlex would split exactly here, 20x slower.
        return _WORDS.findall(command)
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>\n")
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # unbalanced quotes or a trailing escape: take the words as they are
        return _WORDS.findall(command)


_NEEDS_SHLEX = re.compile(r"[\'\"\\#]")
_WORDS = re.compile(r"[;&|()<>\n]+|[^ \t\r\n;&|()<>]+")


def simple_commands(tokens: list[str]) -> Iterator[list[str]]:
    current: list[str] = []
    for token in tokens:
        if token and all(c in _SEPARATORS for c in token):
            if current:
                yield current
            current = []
        elif token == "$":  # the ``$`` of ``$(…)``: the command inside follows
            continue
        else:
            current.append(token)
    if current:
        yield current


def strip_prefixes(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split ``A=1 sudo -u x env B=2 cmd args`` into ({A, B}, [cmd, args])."""
    env: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if _ENV_RE.match(word):
            name, _, value = word.partition("=")
            env[name] = value
            i += 1
            continue
        base = word.rsplit("/", 1)[-1]
        if base in _WRAPPERS:
            takes_value = _WRAPPERS[base]
            i += 1
            while i < len(words) and words[i].startswith("-"):
                flag = words[i]
                i += 1
                if flag == "--":
                    break
                if flag in takes_value and i < len(words):
                    i += 1
            if base == "timeout" and i < len(words) and words[i][:1].isdigit():
                i += 1  # the duration
            if base in ("nice", "watch") and i < len(words) and words[i].lstrip("-").isdigit():
                i += 1
            continue
        break
    return env, words[i:]


def operands(args: list[str], with_value: set[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Positional operands and option values of ``args``.

    ``with_value`` names options that take a value (``-o``, ``--output``). Long options
    may be ``--opt=value``; short clusters (``-sSLo file``, ``-XPOST``) take the rest of
    the cluster or the next word as the value of the first short option that needs one.
    """
    positional: list[str] = []
    options: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positional.extend(args[i:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg.partition("=")
            if eq:
                options.setdefault(name, []).append(value)
            elif name in with_value and i < len(args):
                options.setdefault(name, []).append(args[i])
                i += 1
            else:
                options.setdefault(name, [])
        elif arg.startswith("-") and len(arg) > 1:
            for j in range(1, len(arg)):
                flag = "-" + arg[j]
                if flag in with_value:
                    rest = arg[j + 1 :]
                    if rest:
                        options.setdefault(flag, []).append(rest)
                    elif i < len(args):
                        options.setdefault(flag, []).append(args[i])
                        i += 1
                    break
                options.setdefault(flag, [])
        else:
            positional.append(arg)
    return positional, options
