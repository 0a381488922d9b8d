"""What a shell command line reaches over the network.

``curl``/``wget``/``git``/``pip``/``npm``/``npx``/``twine``/``ssh``/``scp``/``rsync``/
``sftp``/``nc``/``telnet``, also behind wrappers (``sudo``, ``env``, ``timeout``, …),
``python -m pip``, ``uv pip``, nested ``bash -c``/``eval`` and ``$(…)``. Contract:
:func:`command_targets` yields an :class:`~features.egress.target.EgressTarget` per
network operand, in order, possibly repeated; pure (no DNS, no I/O), never raises.

Decisions
---------
- A git remote *name* (``git fetch origin``) has no host here, so nothing is reported
  rather than a guess. scp-like git URLs are normalised: ``git@github.com:o/r.git`` →
  ``https://github.com/o/r``.
- ``pip install``/``npm install`` of packages report the registry (``pypi.org`` /
  ``registry.npmjs.org``, or ``--index-url``/``--registry`` and the ``PIP_INDEX_URL`` /
  ``NPM_CONFIG_REGISTRY`` env prefix). Installs of only local paths report nothing.
- ssh/scp/nc operands may be single-label host names (``bastion``); curl and wget read
  a scheme-less operand as a URL.
- Listening (``nc -l``) is not egress.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from features.egress.target import EgressTarget, url_target
from features.text.hosts import SCP_LIKE_RE, clean_host, host_of
from features.text.shell_words import operands, simple_commands, strip_prefixes, tokenize

__all__ = ["command_targets"]

_MAX_DEPTH = 4  # nesting of ``bash -c``, ``eval`` and ``$(…)`` followed


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
_CURL_VALUE = {
    "-X",
    "--request",
    *_CURL_DATA,  # they take a value too
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


def _curl(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    positional, opts = operands(args, _CURL_VALUE)
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
    positional, opts = operands(args, _WGET_VALUE)
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
        return url_target(operand, via, method)
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
    m = SCP_LIKE_RE.match(repository)
    if not m or "/" in m.group("host"):
        return None
    host = clean_host(m.group("host"), single_label=bool(m.group("user")))
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
    positional, _ = operands(args[i + 1 :], _GIT_VALUE)
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
    positional, opts = operands(args[i + 1 :], _PIP_VALUE)
    via = "pip_download" if verb == "download" else "pip_install"
    index = (opts.get("-i") or opts.get("--index-url") or [env.get("PIP_INDEX_URL", "")])[-1]
    specs = positional + opts.get("-e", []) + opts.get("--editable", [])
    urls = [s.split("@", 1)[1].strip() if " @ " in s else s for s in specs if "://" in s]
    for url in urls:
        target = url_target(url.removeprefix("git+"), "pip_install_url", "GET")
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
            target = url_target(url, via, "GET")
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
    positional, opts = operands(args, {"--registry", "-w", "--workspace", "--prefix", "--tag"})
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
            target = url_target(spec.removeprefix("git+"), via, method)
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
    positional, opts = operands(args, _SSH_VALUE)
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
        positional, _ = operands(args, value_opts)
        for operand in positional:
            if "://" in operand:
                target = url_target(operand, via)
            elif via == "sftp":
                target = _network_operand(operand.split(":", 1)[0], via, single_label=True)
            else:
                m = SCP_LIKE_RE.match(operand)
                host = clean_host(m.group("host"), single_label=True) if m else None
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
        positional, opts = operands(args, _NC_VALUE)
        if "-l" in opts or "--listen" in opts or not positional:
            return  # listening is not egress
        target = _network_operand(positional[0], via, single_label=True)
        if target:
            yield target

    return handler


def _twine(env: Mapping[str, str], args: list[str]) -> Iterator[EgressTarget]:
    positional, opts = operands(
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


def command_targets(command: str, depth: int = 0) -> Iterator[EgressTarget]:
    """Targets of the network commands in one shell command line (nested ``-c`` too).

    ``depth`` is the nesting already entered (callers pass nothing).

    >>> [(t.host, t.via) for t in command_targets(
    ...     "cd app && sudo -E pip install -q requests; ssh -J jump.example.com bastion true")]
    [('pypi.org', 'pip_install'), ('jump.example.com', 'ssh'), ('bastion', 'ssh')]
    """
    if depth > _MAX_DEPTH or not _MAYBE_NETWORK.search(command):
        return
    for words in simple_commands(tokenize(command)):
        env, argv = strip_prefixes(words)
        if not argv:
            continue
        name = argv[0].rsplit("/", 1)[-1]
        args = argv[1:]
        if name in _SHELLS or name == "eval":
            script = args[args.index("-c") + 1] if "-c" in args[:-1] else " ".join(args)
            if name == "eval" or "-c" in args[:-1]:
                yield from command_targets(script, depth + 1)
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
                yield from command_targets(inner, depth + 1)
