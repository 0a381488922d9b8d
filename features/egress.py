"""Where a tool call sends traffic, read from its arguments and shell commands.

HTTP client spans show egress the runtime instrumented; this module finds the rest:
``curl``/``wget``/``git``/``pip``/``npm``/``ssh``/``scp``/``rsync``/``nc`` in shell
commands, URLs in any argument string, ``url``/``host`` fields, e-mail recipients of
mail tools. Pure: no DNS, no I/O.

Decisions
---------
- A *bare* host name (``example.com``) counts only where the caller meant a host: the
  value of a ``url``/``host``-like key, or an operand of a network command. In prose it
  does not ("see example.com for details").
- ``localhost`` and private addresses are reported: it is still traffic, to a local
  service; detectors decide whether it matters.
- A git remote *name* (``git fetch origin``) has no host here, so nothing is reported
  rather than a guess. scp-like git URLs are normalised: ``git@github.com:o/r.git`` →
  ``https://github.com/o/r``.
- ``pip install``/``npm install`` of packages report the registry (``pypi.org`` /
  ``registry.npmjs.org``, or ``--index-url``/``--registry`` and the ``PIP_INDEX_URL`` /
  ``NPM_CONFIG_REGISTRY`` env prefix). Installs of only local paths report nothing.
- E-mail addresses are not hosts to contact, except in tools named like mail/email/smtp
  where recipients' domains are reported (``via="email_recipient"``, ``url="mailto:…"``):
  sending mail to a domain is the exfiltration path detectors care about.
- Version strings (``1.2.3``), ``python3.11`` and file paths are never hosts: a bare host
  needs a dotted name with a letter TLD, ``localhost``, or an IP literal (ssh/scp/nc
  operands may also be single-label names such as ``bastion``).
- URLs are reported as found (credentials included): callers redact ``egress_url``.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["EgressTarget", "egress_targets", "host_of"]


@dataclass(frozen=True, slots=True)
class EgressTarget:
    """One place a tool call talks to.

    ``host`` is lower-case, without port, userinfo, brackets or trailing dot (IDNA for
    non-ASCII names). ``url`` is the URL as found (normalised for scp-like git remotes),
    None when only a host is known. ``method`` is the HTTP method when it can be told.
    ``via`` says how it was found: ``url_in_arguments``, ``host_in_arguments``,
    ``http_tool``, ``curl``, ``wget``, ``git_clone``, ``git_fetch``, ``git_pull``,
    ``git_push``, ``git_ls_remote``, ``pip_install``, ``pip_download``,
    ``pip_install_url``, ``npm_install``, ``npm_view``, ``npm_publish``, ``npx``,
    ``twine_upload``, ``ssh``, ``scp``, ``sftp``, ``rsync``, ``nc``, ``telnet``,
    ``email_recipient``.
    """

    host: str
    url: str | None
    method: str | None
    via: str


# ---------------------------------------------------------------------------
# Hosts
# ---------------------------------------------------------------------------

_LABEL_RE = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_SCP_LIKE_RE = re.compile(
    r"^(?:(?P<user>[^@/\s:]+)@)?(?P<host>\[[0-9a-fA-F:.]+\]|[^@/\s:\[\]]+):(?!//)"
)


def _clean_host(raw: str, *, single_label: bool = False) -> str | None:
    """``raw`` as a contactable host name or IP literal, lower-case, or None."""
    host = raw.strip().strip("[]").rstrip(".").lower()
    if not host or len(host) > 253:
        return None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    labels = host.split(".")
    if not all(_LABEL_RE.fullmatch(label) for label in labels):
        return None
    if len(labels) == 1:
        return host if (single_label or host == "localhost") and not host.isdigit() else None
    tld = labels[-1]
    if not any(c.isalpha() for c in tld) or tld.isdigit():
        return None  # 1.2.3, python3.11, 10.0.0 are not host names
    return host


def host_of(url: str, *, bare: bool = False, single_label: bool = False) -> str | None:
    """The host a URL or address points at, or None.

    Understands ``scheme://[user[:pw]@]host[:port]/…`` (IPv6 in brackets) and scp-like
    ``user@host:path``. With ``bare=True`` it also takes ``host``, ``host:port``,
    ``host/path`` and ``user@host`` (callers pass it where a host is expected);
    ``single_label`` accepts names without a dot (``bastion``). ``file:`` and other
    host-less URLs give None.

    >>> host_of("https://User:pw@API.Example.COM.:8443/v1?q=1")
    'api.example.com'
    >>> host_of("git@github.com:org/repo.git"), host_of("http://[::1]:8080/x")
    ('github.com', '::1')
    >>> host_of("example.com/path"), host_of("example.com/path", bare=True)
    (None, 'example.com')
    """
    text = url.strip()
    if not text:
        return None
    if "://" in text:
        try:
            parts = urlsplit(text)
            host = parts.hostname
        except ValueError:
            return None
        return _clean_host(host, single_label=True) if host else None
    m = _SCP_LIKE_RE.match(text)
    if m and (m.group("user") or bare):
        candidate = m.group("host")
        return _clean_host(candidate, single_label=single_label or bool(m.group("user")))
    if not bare:
        return None
    host = text.split("/", 1)[0].rsplit("@", 1)[-1]
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    elif host.count(":") == 1:
        host, _, port = host.partition(":")
        if not port.isdigit():
            return None
    return _clean_host(host, single_label=single_label)


# ---------------------------------------------------------------------------
# URLs in free text
# ---------------------------------------------------------------------------

_URL_RE = re.compile(
    r"(?<![\w+.-])(?:https?|wss?|ftps?|sftp|ssh|git|git\+https|git\+ssh|rsync|grpcs?|"
    r"redis|rediss|postgres|postgresql|mysql|mongodb|mongodb\+srv|amqps?|nats|smtps?|imaps?)"
    r"://[^\s\"'<>`\\|^{}]+",
    re.IGNORECASE,
)
_TRAILING = ".,;:!?'\")]}>"


def _urls(text: str) -> Iterator[str]:
    for m in _URL_RE.finditer(text):
        url = m.group(0)
        while url and url[-1] in _TRAILING:
            if url[-1] == ")" and url.count("(") >= url.count(")"):
                break  # a balanced paren belongs to the URL (wiki links)
            url = url[:-1]
        yield url


def _url_target(url: str, via: str, method: str | None = None) -> EgressTarget | None:
    host = host_of(url)
    return EgressTarget(host, url, method, via) if host else None


# ---------------------------------------------------------------------------
# Shell commands
# ---------------------------------------------------------------------------

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
_MAX_DEPTH = 4


def _tokenize(command: str) -> list[str]:
    """Shell words with operators as their own tokens; whitespace split when quotes are bad."""
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


def _simple_commands(tokens: list[str]) -> Iterator[list[str]]:
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


def _strip_prefixes(words: list[str]) -> tuple[dict[str, str], list[str]]:
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


def _operands(args: list[str], with_value: set[str]) -> tuple[list[str], dict[str, list[str]]]:
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


_CURL_VALUE = {
    "-X",
    "--request",
    "-d",
    "--data",
    "--data-raw",
    "--data-binary",
    "--data-urlencode",
    "--data-ascii",
    "--json",
    "-F",
    "--form",
    "--form-string",
    "-H",
    "--header",
    "-o",
    "--output",
    "-u",
    "--user",
    "-A",
    "--user-agent",
    "-e",
    "--referer",
    "-b",
    "--cookie",
    "-c",
    "--cookie-jar",
    "-T",
    "--upload-file",
    "-x",
    "--proxy",
    "-m",
    "--max-time",
    "--connect-timeout",
    "-w",
    "--write-out",
    "-K",
    "--config",
    "--cacert",
    "--capath",
    "--cert",
    "-E",
    "--key",
    "-r",
    "--range",
    "-C",
    "--continue-at",
    "--retry",
    "--retry-delay",
    "--retry-max-time",
    "-U",
    "--proxy-user",
    "--resolve",
    "--connect-to",
    "--limit-rate",
    "-y",
    "--speed-time",
    "-Y",
    "--speed-limit",
    "-z",
    "--time-cond",
    "--max-redirs",
    "--interface",
    "--dns-servers",
    "--unix-socket",
    "-P",
    "--ftp-port",
    "--url",
    "--oauth2-bearer",
    "--aws-sigv4",
    "--variable",
    "--expand-url",
    "-t",
    "--telnet-option",
    "--noproxy",
    "--output-dir",
    "--trace",
    "--trace-ascii",
    "--stderr",
    "-D",
    "--dump-header",
    "--etag-save",
    "--etag-compare",
    "--hostpubmd5",
    "--pubkey",
}
_CURL_DATA = (
    "-d",
    "--data",
    "--data-raw",
    "--data-binary",
    "--data-urlencode",
    "--data-ascii",
    "--json",
    "-F",
    "--form",
    "--form-string",
)


def _curl(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    positional, opts = _operands(args, _CURL_VALUE)
    method = None
    for flag in ("-X", "--request"):
        if opts.get(flag):
            method = opts[flag][-1].upper()
    if method is None:
        if "-I" in opts or "--head" in opts:
            method = "HEAD"
        elif "-G" in opts or "--get" in opts:
            method = "GET"
        elif "-T" in opts or "--upload-file" in opts:
            method = "PUT"
        elif any(flag in opts for flag in _CURL_DATA):
            method = "POST"
        else:
            method = "GET"
    for url in positional + opts.get("--url", []):
        target = _network_operand(url, "curl", method)
        if target:
            yield target


_WGET_VALUE = {
    "-O",
    "--output-document",
    "-o",
    "--output-file",
    "-a",
    "--append-output",
    "-i",
    "--input-file",
    "-B",
    "--base",
    "-e",
    "--execute",
    "-t",
    "--tries",
    "-T",
    "--timeout",
    "-w",
    "--wait",
    "-Q",
    "--quota",
    "-P",
    "--directory-prefix",
    "-U",
    "--user-agent",
    "-l",
    "--level",
    "-A",
    "--accept",
    "-R",
    "--reject",
    "-D",
    "--domains",
    "-I",
    "--include-directories",
    "-X",
    "--exclude-directories",
    "--header",
    "--post-data",
    "--post-file",
    "--method",
    "--body-data",
    "--body-file",
    "--user",
    "--password",
    "--http-user",
    "--http-password",
    "--load-cookies",
    "--save-cookies",
    "--referer",
    "--limit-rate",
    "--ca-certificate",
    "--certificate",
    "--private-key",
}


def _wget(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    positional, opts = _operands(args, _WGET_VALUE)
    method = "GET"
    if opts.get("--method"):
        method = opts["--method"][-1].upper()
    elif "--post-data" in opts or "--post-file" in opts:
        method = "POST"
    for url in positional:
        target = _network_operand(url, "wget", method)
        if target:
            yield target


def _network_operand(
    operand: str, via: str, method: str | None = None, *, single_label: bool = False
) -> EgressTarget | None:
    """An operand that a network command contacts: a URL, or a bare host."""
    if "://" in operand:
        return _url_target(operand, via, method)
    host = host_of(operand, bare=True, single_label=single_label)
    # curl and wget read a scheme-less operand as a URL; ssh/nc operands are only hosts
    url = operand if via in ("curl", "wget") else None
    return EgressTarget(host, url, method, via) if host else None


_GIT_GLOBAL_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}
_GIT_VALUE = {
    "-b",
    "--branch",
    "-o",
    "--origin",
    "--depth",
    "--reference",
    "--reference-if-able",
    "-c",
    "--config",
    "--separate-git-dir",
    "-u",
    "--upload-pack",
    "-j",
    "--jobs",
    "--filter",
    "--shallow-since",
    "--shallow-exclude",
    "--server-option",
    "--negotiation-tip",
    "--refmap",
    "--repo",
    "--push-option",
    "--receive-pack",
    "--exec",
    "--template",
    "--bundle-uri",
    "--recurse-submodules-default",
    "-s",
    "--strategy",
    "-X",
    "--strategy-option",
    "-m",
}
_GIT_VIA = {
    "clone": "git_clone",
    "fetch": "git_fetch",
    "pull": "git_pull",
    "push": "git_push",
    "ls-remote": "git_ls_remote",
}


def _git_remote(repository: str) -> tuple[str, str] | None:
    """(host, url) for a repository operand that is a URL, None for names and paths."""
    if "://" in repository:
        if repository.lower().startswith("file:"):
            return None
        host = host_of(repository)
        return (host, repository) if host else None
    m = _SCP_LIKE_RE.match(repository)
    if not m or "/" in m.group("host"):
        return None
    host = _clean_host(m.group("host"), single_label=bool(m.group("user")))
    if host is None or (not m.group("user") and "." not in host):
        return None  # ``origin:branch`` refspec, ``C:`` drive letter
    path = repository[m.end() :].strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return host, f"https://{host}/{path}"


def _git(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    i = 0
    while i < len(args) and args[i].startswith("-"):  # global options before the verb
        flag = args[i].partition("=")[0]
        i += 2 if flag in _GIT_GLOBAL_VALUE and "=" not in args[i] else 1
    if i >= len(args) or args[i] not in _GIT_VIA:
        return
    verb = args[i]
    positional, _ = _operands(args[i + 1 :], _GIT_VALUE)
    if not positional:
        return
    remote = _git_remote(positional[0])
    if remote:
        yield EgressTarget(remote[0], remote[1], None, _GIT_VIA[verb])


_PIP_VALUE = {
    "-r",
    "--requirement",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-c",
    "--constraint",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "-e",
    "--editable",
    "--trusted-host",
    "--platform",
    "--python-version",
    "--only-binary",
    "--no-binary",
    "-d",
    "--dest",
    "--cache-dir",
    "--proxy",
    "--timeout",
    "--retries",
    "--src",
    "--upgrade-strategy",
    "--progress-bar",
    "--log",
    "--implementation",
    "--abi",
    "-C",
    "--config-settings",
    "--report",
    "--python",
    "--cert",
    "--client-cert",
    "--exists-action",
    "--global-option",
    "--install-option",
    "--keyring-provider",
}
_PYPI = "pypi.org"
_NPM_REGISTRY = "registry.npmjs.org"


def _is_local(spec: str) -> bool:
    """A package spec that names a file or directory, not something to download."""
    if spec.startswith((".", "/", "~", "file:")):
        return True
    return spec.endswith((".whl", ".tar.gz", ".zip", ".tgz")) and "://" not in spec


def _registry(url: str | None, default: str, via: str, method: str) -> EgressTarget | None:
    if url:
        host = host_of(url, bare=True)
        return EgressTarget(host, url, method, via) if host else None
    return EgressTarget(default, None, method, via)


def _pip(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 1
    if i >= len(args) or args[i] not in ("install", "download", "wheel"):
        return
    verb = args[i]
    positional, opts = _operands(args[i + 1 :], _PIP_VALUE)
    via = "pip_download" if verb == "download" else "pip_install"
    index = (opts.get("-i") or opts.get("--index-url") or [env.get("PIP_INDEX_URL", "")])[-1]
    specs = positional + opts.get("-e", []) + opts.get("--editable", [])
    urls = [s.split("@", 1)[1].strip() if " @ " in s else s for s in specs if "://" in s]
    for url in urls:
        target = _url_target(url.removeprefix("git+"), "pip_install_url", "GET")
        if target:
            yield EgressTarget(target.host, url, "GET", "pip_install_url")
    from_index = [s for s in specs if "://" not in s and not _is_local(s)]
    if from_index or opts.get("-r") or opts.get("--requirement"):
        target = _registry(index or None, _PYPI, via, "GET")
        if target:
            yield target
    for url in (
        opts.get("--extra-index-url", []) + opts.get("-f", []) + opts.get("--find-links", [])
    ):
        if "://" in url:
            target = _url_target(url, via, "GET")
            if target:
                yield target


_NPM_VIA = {
    "install": "npm_install",
    "i": "npm_install",
    "add": "npm_install",
    "ci": "npm_install",
    "update": "npm_install",
    "up": "npm_install",
    "exec": "npx",
    "view": "npm_view",
    "info": "npm_view",
    "show": "npm_view",
    "v": "npm_view",
    "publish": "npm_publish",
}


def _npm(env: Mapping[str, str], args: list[str], *, npx: bool = False) -> Iterator[EgressTarget]:
    positional, opts = _operands(args, {"--registry", "-w", "--workspace", "--prefix", "--tag"})
    if npx:
        verb, rest = "exec", positional
    else:
        if not positional or positional[0] not in _NPM_VIA:
            return
        verb, rest = positional[0], positional[1:]
    via = _NPM_VIA[verb]
    registry = (opts.get("--registry") or [env.get("NPM_CONFIG_REGISTRY", "")])[-1] or None
    method = "PUT" if verb == "publish" else "GET"
    for spec in rest:
        if "://" in spec:
            target = _url_target(spec.removeprefix("git+"), via, method)
            if target:
                yield EgressTarget(target.host, spec, method, via)
    remote_specs = [s for s in rest if "://" not in s and not _is_local(s)]
    if remote_specs or (verb in ("install", "i", "ci", "update", "up", "publish") and not rest):
        target = _registry(registry, _NPM_REGISTRY, via, method)
        if target:
            yield target


_SSH_VALUE = {
    "-b",
    "-c",
    "-D",
    "-E",
    "-e",
    "-F",
    "-I",
    "-i",
    "-J",
    "-L",
    "-l",
    "-m",
    "-O",
    "-o",
    "-p",
    "-Q",
    "-R",
    "-S",
    "-W",
    "-w",
    "-B",
    "-P",
    "-X",
}


def _ssh(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    positional, opts = _operands(args, _SSH_VALUE)
    for jump in opts.get("-J", []):
        for hop in jump.split(","):
            target = _network_operand(hop, "ssh", single_label=True)
            if target:
                yield target
    if positional:  # the destination; the rest is a command run on the remote side
        target = _network_operand(positional[0], "ssh", single_label=True)
        if target:
            yield target


def _copy(via: str) -> Callable[[Mapping[str, str], list[str]], Iterator[EgressTarget]]:
    """scp/rsync/sftp: every ``[user@]host:path`` or ``scheme://`` operand is remote."""
    value_opts = _SSH_VALUE | {"--rsh", "--exclude", "--include", "--filter", "--port"}

    def handler(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
        positional, _ = _operands(args, value_opts)
        for operand in positional:
            if "://" in operand:
                target = _url_target(operand, via)
            elif via == "sftp":
                target = _network_operand(operand.split(":", 1)[0], via, single_label=True)
            else:
                m = _SCP_LIKE_RE.match(operand)
                host = _clean_host(m.group("host"), single_label=True) if m else None
                target = EgressTarget(host, None, None, via) if host and len(host) > 1 else None
            if target:
                yield target

    return handler


_NC_VALUE = {
    "-p",
    "-s",
    "-w",
    "-i",
    "-x",
    "-X",
    "-e",
    "-c",
    "-q",
    "-O",
    "-I",
    "-T",
    "-V",
    "-M",
    "-m",
    "-P",
}


def _nc(via: str) -> Callable[[Mapping[str, str], list[str]], Iterator[EgressTarget]]:
    def handler(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
        positional, opts = _operands(args, _NC_VALUE)
        if "-l" in opts or "--listen" in opts or not positional:
            return  # listening is not egress
        target = _network_operand(positional[0], via, single_label=True)
        if target:
            yield target

    return handler


def _twine(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    positional, opts = _operands(
        args,
        {
            "-r",
            "--repository",
            "--repository-url",
            "-u",
            "--username",
            "-p",
            "--password",
            "--config-file",
        },
    )
    if positional[:1] != ["upload"]:
        return
    url = (opts.get("--repository-url") or [""])[-1]
    target = _registry(url or None, "upload.pypi.org", "twine_upload", "POST")
    if target:
        yield target


_Handler = Callable[[Mapping[str, str], list[str]], Iterator[EgressTarget]]
_COMMANDS: dict[str, _Handler] = {
    "curl": _curl,
    "wget": _wget,
    "git": _git,
    "pip": _pip,
    "pip3": _pip,
    "npm": _npm,
    "pnpm": _npm,
    "npx": lambda env, args: _npm(env, args, npx=True),
    "ssh": _ssh,
    "scp": _copy("scp"),
    "rsync": _copy("rsync"),
    "sftp": _copy("sftp"),
    "nc": _nc("nc"),
    "ncat": _nc("nc"),
    "netcat": _nc("nc"),
    "telnet": _nc("telnet"),
    "twine": _twine,
}
_PYTHON_RE = re.compile(r"python(?:\d+(?:\.\d+)?)?")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
# Tokenising with shlex costs ~150 µs per command; most commands (pytest, ls, sed)
# name no network command at all, and any that does names it as a word. Nested
# shells (`bash -c "curl ..."`) still contain the word, so the filter is exact.
_NETWORK_WORDS = "|".join(sorted(map(re.escape, _COMMANDS)))
_MAYBE_NETWORK = re.compile(rf"\b(?:{_NETWORK_WORDS}|uv)\b")


def _command_targets(command: str, depth: int = 0) -> Iterator[EgressTarget]:
    """Targets of the network commands in one shell command line (nested ``-c`` too)."""
    if depth > _MAX_DEPTH or not _MAYBE_NETWORK.search(command):
        return
    for words in _simple_commands(_tokenize(command)):
        env, argv = _strip_prefixes(words)
        if not argv:
            continue
        name = argv[0].rsplit("/", 1)[-1]
        args = argv[1:]
        if name in _SHELLS or name == "eval":
            script = args[args.index("-c") + 1] if "-c" in args[:-1] else " ".join(args)
            if name == "eval" or "-c" in args[:-1]:
                yield from _command_targets(script, depth + 1)
            continue
        if _PYTHON_RE.fullmatch(name) and args[:2] == ["-m", "pip"]:
            name, args = "pip", args[2:]
        elif name == "uv" and args[:1] == ["pip"]:
            name, args = "pip", args[1:]
        handler = _COMMANDS.get(name)
        if handler is not None:
            yield from handler(env, args)
        for arg in args:  # $(…) and backticks kept inside a quoted word
            if "$(" in arg or "`" in arg:
                inner = arg.replace("$(", " ; ").replace(")", " ; ").replace("`", " ; ")
                yield from _command_targets(inner, depth + 1)


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------

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
_EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")
_MAX_WALK = 32


def _maybe_json(text: str) -> object:
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] in "{[" and stripped[-1] in "}]":
        try:
            return json.loads(stripped)
        except ValueError:
            return None
    return None


class _Collector:
    """Walks arguments and gathers targets in order, first finding wins."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.shell_tool = bool(_SHELL_TOOL_RE.search(tool))
        self.http_tool = bool(_HTTP_TOOL_RE.search(tool)) and not self.shell_tool
        self.mail_tool = bool(_MAIL_TOOL_RE.search(tool))
        self.targets: list[EgressTarget] = []
        self.later: list[EgressTarget] = []  # generic URL scan: after specific findings

    def walk(self, value: object, key: str | None = None, depth: int = 0) -> None:
        if depth > _MAX_WALK:
            return
        if isinstance(value, str):
            self.string(value, key, depth)
        elif isinstance(value, Mapping):
            items = [(k, v) for k, v in value.items() if isinstance(k, str)]
            method = next(
                (v.upper() for k, v in items if k.lower() == "method" and isinstance(v, str)),
                None,
            )
            # url/host keys first: they name the target, other strings merely mention URLs
            for k, v in items:
                low = k.lower()
                if low in _URL_KEYS or low in _HOST_KEYS:
                    self.keyed(v, low, method)
            for k, v in items:
                self.walk(v, k.lower(), depth + 1)
        elif isinstance(value, (list, tuple)):
            if key in _SHELL_KEYS and value and all(isinstance(v, str) for v in value):
                self.shell(shlex.join(value))  # argv form: ["curl", "-s", url]
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
                target = _url_target(v.strip(), via, method if self.http_tool else None)
            else:
                host = host_of(v, bare=True)
                target = EgressTarget(host, v.strip(), method, via) if host else None
            if target:
                self.targets.append(target)

    def string(self, text: str, key: str | None, depth: int) -> None:
        parsed = _maybe_json(text)
        if parsed is not None:
            self.walk(parsed, key, depth + 1)
            return
        if key in _SHELL_KEYS or (self.shell_tool and key in (None, "input", "code")):
            self.shell(text)
        if self.mail_tool and key in _EMAIL_KEYS:
            for m in _EMAIL_RE.finditer(text):
                host = _clean_host(m.group(1))
                if host:
                    url = "mailto:" + m.group(0)
                    self.targets.append(EgressTarget(host, url, None, "email_recipient"))
        if "://" in text:
            for url in _urls(text):
                target = _url_target(url, "url_in_arguments")
                if target:
                    self.later.append(target)

    def shell(self, command: str) -> None:
        self.targets.extend(_command_targets(command))

    def result(self) -> list[EgressTarget]:
        seen: set[tuple[str, str | None] | tuple[str, None, str]] = set()
        out: list[EgressTarget] = []
        for target in self.targets + self.later:
            key: tuple[str, str | None] | tuple[str, None, str] = (
                (target.host, target.url) if target.url else (target.host, None, target.via)
            )
            if key not in seen:
                seen.add(key)
                out.append(target)
        return out


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
            collector.shell(arguments)
            collector.string(arguments, "", 0)  # plus the generic URL scan
        else:
            collector.string(arguments, None, 0)
    elif isinstance(arguments, (Mapping, list, tuple)):
        collector.walk(arguments)
    return collector.result()
