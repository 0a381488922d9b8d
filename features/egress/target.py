"""The record of one network target of a tool call, shared by the extractors.

Contract: :class:`EgressTarget` is a frozen value; :func:`url_target` builds one from a
URL that has a host and gives None for one that has not (``file:``, host-less text).
"""

from __future__ import annotations

from dataclasses import dataclass

from features.text.hosts import host_of

__all__ = ["EgressTarget", "url_target"]


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


def url_target(url: str, via: str, method: str | None = None) -> EgressTarget | None:
    """``url`` as a target found ``via`` one way, or None when it names no host."""
    host = host_of(url)
    return EgressTarget(host, url, method, via) if host else None
