"""The redaction rules: what a secret looks like, as tables and small match functions.

Each :class:`_Rule` names its kind (the ``<kind>`` of ``[REDACTED:<kind>]``), its pattern and
the trigger substrings one of which every match holds; :data:`_RULES` is the table the
engine (:mod:`features.redact.engine`) runs, and :func:`secret_name_kind` judges a name (a
dict key, an environment variable, a flag) by its last word. The kinds recognised and
what is deliberately *not* redacted are listed in :mod:`features.redact.engine`'s contract.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

MARKER_PREFIX = "[REDACTED:"


def _marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


# ---------------------------------------------------------------------------
# Value judgements shared by the rules
# ---------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    {
        "",
        "true",
        "false",
        "null",
        "none",
        "nil",
        "undefined",
        "changeme",
        "change_me",
        "change-me",
        "placeholder",
        "redacted",
        "example",
        "dummy",
        "password",
        "secret",
        "token",
        "api_key",
        "apikey",
        "xxx",
        "todo",
        "required",
        "optional",
        # type names: ``password: str``, ``token: Optional[str]`` in code
        "str",
        "string",
        "int",
        "bool",
        "bytes",
        "number",
        "any",
        "secretstr",
        "text",
    }
)
_PLACEHOLDER_RE = re.compile(
    r"""
    \$\{[^}]*\}? | \$\(.*\)? | \$[A-Za-z_]\w* | %[A-Za-z_]\w*% |   # shell / cmd references
    \{\{.*\}\}   | \{[A-Za-z_][\w.]*\}        |                     # templates, str.format
    <[^<>]*>     |                                                 # <YOUR_API_KEY>
    (?i:your[_-].*|my[_-]?(?:api[_-]?)?(?:key|token|secret|password)|x+|\*{3,}.*|.*\*{3,}) |
    (.)\1*                                                         # one repeated char
    """,
    re.VERBOSE,
)


def _is_placeholder(value: str) -> bool:
    """True when ``value`` is a stand-in, a reference or already redacted, not a secret."""
    v = value.strip().strip("\"'`")
    if v.lower() in _PLACEHOLDER_WORDS or v.startswith(MARKER_PREFIX):
        return True
    if "..." in v or "…" in v:
        return True
    return _PLACEHOLDER_RE.fullmatch(v) is not None


def _looks_random(value: str) -> bool:
    """Cheap stand-in for entropy: letters mixed with digits, or both cases in a long run.

    Used where a fixed prefix alone could be an ordinary word (``Bearer token``,
    ``hf_hub_download``), never as a detector on its own.
    """
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if has_digit and has_alpha:
        return True
    return len(value) >= 16 and any(c.isupper() for c in value) and any(c.islower() for c in value)


_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEP_RE = re.compile(r"[^A-Za-z0-9]+")
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "access",
        "secret",
        "private",
        "signing",
        "encryption",
        "master",
        "client",
        "account",
        "storage",
        "subscription",
        "service",
        "auth",
        "session",
        "shared",
        "app",
        "consumer",
        "admin",
        "license",
        "host",
        "function",
        "primary",
        "secondary",
    }
)
_NOT_SECRET_TOKEN_PREV = frozenset(
    {
        "page",
        "next",
        "continuation",
        "cursor",
        "sync",
        "stop",
        "max",
        "num",
        "total",
        "eos",
        "bos",
        "pad",
        "unk",
        "sep",
        "cls",
        "mask",
        "special",
        "start",
        "end",
        "prev",
        "previous",
    }
)
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "pass", "pw"})


def _words(name: str) -> list[str]:
    return [w for w in _SEP_RE.split(_CAMEL_RE.sub("_", name).lower()) if w]


@lru_cache(maxsize=4096)
def secret_name_kind(name: str) -> str | None:
    """The redaction kind for a field or variable called ``name``, or None if it holds no secret.

    >>> [secret_name_kind(n) for n in ("PGPASSWORD", "X-Api-Key", "max_tokens")]
    ['password_assignment', 'api_key_assignment', None]
    """
    words = _words(name)
    if not words:
        return None
    last = words[-1]
    prev = words[-2] if len(words) > 1 else ""
    if last in _PASSWORD_WORDS or last.endswith(("password", "passwd", "passphrase")):
        # ``--no-password`` is a switch, ``pass``/``pw`` alone is too vague
        if prev == "no" or (last in {"pass", "pw"} and not prev):
            return None
        return "password_assignment"
    if last.endswith("token"):
        if prev in _NOT_SECRET_TOKEN_PREV or last in {"pagetoken", "nexttoken"}:
            return None
        return "api_key_assignment"
    if last.endswith(("secret", "apikey", "accesskey", "secretkey", "privatekey")):
        return "api_key_assignment"
    if last == "key" and prev in _KEY_QUALIFIERS:
        return "api_key_assignment"
    if last in {"authorization", "credential", "auth"}:
        return "api_key_assignment"
    return None


_CODE_REF_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_NUMBER_RE = re.compile(r"[-+]?\d+(?:\.\d+)?")
_IDENT_RE = re.compile(r"[A-Za-z_]\w*")


def _bare_value_is_data(name: str, value: str, after: str) -> bool:
    """Whether an *unquoted* value after ``name=`` is data rather than code.

    ``after`` is the character right after the value (``(`` or ``[`` mean a call or
    an index, so the value was an expression).
    """
    if after and after in "([":
        return False
    if _CODE_REF_RE.fullmatch(value) or _NUMBER_RE.fullmatch(value):
        return False
    if value.startswith(("/", "~/", "./", "../")):
        return False
    if _IDENT_RE.fullmatch(value):
        # ``password=password``, ``api_key=openai_api_key``: passing a variable along
        low = value.lower()
        words = _words(name)
        if words and (words[-1] in low or low in name.lower()):
            return False
    return True


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    """One pattern and what replaces its matches.

    Patterns start with a literal (or an alternation of literals) and check the
    character before a match in Python instead of with ``\\b`` or a lookbehind: that
    lets the regex engine skip ahead with its prefix search (~1 µs per 2 KB instead of
    ~30 µs per 2 KB).
    """

    name: str
    triggers: tuple[str, ...]
    """Lower-case substrings, at least one of which every match holds (lower-cased): where
    none occurs the pattern cannot match. They make the one-scan prefilter
    (:data:`features.redact.engine._CANDIDATE_RE`); ``tests/unit/features/test_redact.py``
    checks them against the patterns."""
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]
    literal_prefix: bool = True
    """Whether the pattern starts with a literal, so that it runs directly (the engine's
    prefix search is as cheap as ``in``); otherwise it runs only when a trigger occurs."""
    anchored: bool = False
    """Every match *starts* with a trigger: the pattern is then tried only where one
    occurs (:func:`_sub_at_triggers`) instead of searching every position."""


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_WORD = _ALNUM | {"_"}
_WORD_DASH = _WORD | {"-"}


def _preceded_by(m: re.Match[str], chars: frozenset[str]) -> bool:
    start = m.start()
    return start > 0 and m.string[start - 1] in chars


def _whole(
    kind: str,
    group: str = "secret",
    check: Callable[[str], bool] | None = None,
    left: frozenset[str] = _ALNUM,
) -> Callable[[re.Match[str]], str]:
    """Replacement that swaps named group ``group`` for a marker, keeping the rest.

    The match is left alone when the character before it is in ``left`` (the secret
    is the tail of a longer word), when the secret is a placeholder, or when ``check``
    rejects it.
    """

    def repl(m: re.Match[str]) -> str:
        secret = m.group(group)
        if (
            secret is None
            or _preceded_by(m, left)
            or _is_placeholder(secret)
            or (check is not None and not check(secret))
        ):
            return m.group(0)
        start, end = m.span(group)
        base = m.start()
        whole = m.group(0)
        return whole[: start - base] + _marker(kind) + whole[end - base :]

    return repl


_VALUE = r"""(?:
      (?P<dq>"(?:[^"\\\n]|\\[^\n])*")        # "value"
    | (?P<sq>'[^'\n]*')                       # 'value'
    | (?P<eq>\\"(?:(?!\\").){0,500}\\")       # \"value\" inside JSON-encoded JSON
    | (?P<bare>[^\s"'`,;&|<>(){}\[\]\\=][^\s"'`,;&|<>(){}\[\]\\]*)
)"""


def _value_span(m: re.Match[str]) -> tuple[str, int, int, bool]:
    """The value text without quotes, its span in the match, and whether it was quoted."""
    for group, strip in (("dq", 1), ("sq", 1), ("eq", 2)):
        if m.group(group) is not None:
            start, end = m.span(group)
            return m.group(group)[strip:-strip], start + strip, end - strip, True
    start, end = m.span("bare")
    return m.group("bare"), start, end, False


def _swap_value(m: re.Match[str], kind: str, vstart: int, vend: int) -> str:
    base = m.start()
    whole = m.group(0)
    return whole[: vstart - base] + _marker(kind) + whole[vend - base :]


_NAME_CHARS = _WORD | {".", "-"}


def _assignment(m: re.Match[str]) -> str:
    text = m.string
    begin = m.start()
    # The pattern starts at the secret word; the name may begin earlier (DB_PASSWORD).
    while begin > 0 and text[begin - 1] in _NAME_CHARS:
        begin -= 1
    name = text[begin : m.end("name")].strip("-.")
    kind = secret_name_kind(name)
    if kind is None or name.lower().endswith("authorization"):
        # the ``authorization`` rule owns that header: it keeps the scheme
        return m.group(0)
    value, vstart, vend, quoted = _value_span(m)
    if _is_placeholder(value):
        return m.group(0)
    if not quoted and not _bare_value_is_data(name, value, text[vend : vend + 1]):
        return m.group(0)
    return _swap_value(m, kind, vstart, vend)


def _flag(m: re.Match[str]) -> str:
    name = m.group("name")
    kind = secret_name_kind(name)
    if kind is None or _preceded_by(m, _WORD_DASH):
        return m.group(0)
    value, vstart, vend, quoted = _value_span(m)
    if _is_placeholder(value) or value.startswith("-"):
        return m.group(0)
    if not quoted and not _bare_value_is_data(name, value, m.string[vend : vend + 1]):
        return m.group(0)
    return _swap_value(m, kind, vstart, vend)


_AUTH_KINDS = {"bearer": "bearer_token", "basic": "basic_auth"}


def _authorization(m: re.Match[str]) -> str:
    scheme = (m.group("scheme") or "").lower()
    kind = _AUTH_KINDS.get(scheme, "authorization_header")
    return _whole(kind, "cred", left=_WORD)(m)


def _curl_user(m: re.Match[str]) -> str:
    if m.group("user").isdigit():  # ``docker run -u 1000:1000`` is uid:gid
        return m.group(0)
    return _whole("basic_auth", "pw", left=_WORD_DASH)(m)


def _cased(*words: str) -> str:
    """``(?:word|Word|WORD|…)``: case-insensitive enough, without ``(?i)``'s slow scan."""
    forms = []
    for word in words:
        forms += [word, word[0].upper() + word[1:], word.upper()]
    return "(?:" + "|".join(dict.fromkeys(forms)) + ")"


def _token_rule(kind: str, prefixes: tuple[str, ...], body: str, *, case: bool = True) -> _Rule:
    """A provider token recognised by its documented prefix and body: ``prefixes``
    (literal, as the provider spells them) then ``body`` (a regex of bounded, fixed
    classes: linear). Kept when the body is a placeholder (``glpat-xxxxxxxx…``): it
    must mix letters with digits or cases (:func:`_looks_random`)."""
    alternatives = "|".join(re.escape(p) for p in prefixes)
    pattern = re.compile(
        rf"(?P<secret>(?:{alternatives})(?P<body>{body}))(?![A-Za-z0-9])",
        0 if case else re.IGNORECASE,
    )

    def repl(m: re.Match[str]) -> str:
        if not _looks_random(m.group("body")):
            return m.group(0)
        return _whole(kind)(m)

    return _Rule(kind, tuple(p.lower() for p in prefixes), pattern, repl)


_PROVIDER_TOKENS: tuple[_Rule, ...] = (
    # Formats as the providers document them (and secret scanners such as gitleaks
    # match them): a fixed prefix, then the random part.
    _token_rule(
        "gitlab_token",
        (
            "glpat-",
            "glptt-",
            "gldt-",
            "glrt-",
            "gloas-",
            "glcbt-",
            "glimt-",
            "glsoat-",
            "glffct-",
            "glagent-",
            "glft-",
        ),
        r"[A-Za-z0-9_.-]{20,300}",
    ),
    _token_rule("sendgrid_key", ("SG.",), r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    _token_rule("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"[a-fA-F0-9]{32}"),
    _token_rule("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"[a-f0-9]{64}"),
    _token_rule(
        "doppler_token",
        ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
        r"[A-Za-z0-9]{40,44}",
    ),
    _token_rule("linear_key", ("lin_api_", "lin_oauth_"), r"[A-Za-z0-9]{40,64}"),
    _token_rule("mailgun_key", ("key-",), r"[0-9a-f]{32}"),
    _token_rule("heroku_key", ("HRKU-",), r"[A-Za-z0-9_-]{20,100}"),
    _token_rule("sentry_token", ("sntrys_", "sntryu_"), r"[A-Za-z0-9+/=_-]{32,400}"),
    _token_rule("grafana_token", ("glsa_", "glc_"), r"[A-Za-z0-9+/_=-]{32,400}"),
    _token_rule("vault_token", ("hvs.", "hvb."), r"[A-Za-z0-9_-]{24,400}"),
    _token_rule("postman_key", ("PMAK-",), r"[a-f0-9]{24}-[a-f0-9]{34}"),
    _token_rule("databricks_token", ("dapi",), r"[a-f0-9]{32}(?:-\d)?"),
    _token_rule("newrelic_key", ("NRAK-", "NRJS-", "NRII-"), r"[A-Z0-9]{19,32}"),
    _token_rule("pulumi_token", ("pul-",), r"[a-f0-9]{40}"),
    _token_rule("supabase_token", ("sbp_",), r"[a-f0-9]{40}"),
    _token_rule("age_secret_key", ("AGE-SECRET-KEY-1",), r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _token_rule("groq_key", ("gsk_",), r"[A-Za-z0-9]{40,60}"),
    _token_rule("xai_key", ("xai-",), r"[A-Za-z0-9]{60,100}"),
    _token_rule("perplexity_key", ("pplx-",), r"[A-Za-z0-9]{40,60}"),
    _token_rule("replicate_token", ("r8_",), r"[A-Za-z0-9]{37}"),
    _token_rule("figma_token", ("figd_",), r"[A-Za-z0-9_-]{40,50}"),
    _token_rule("notion_token", ("ntn_", "secret_"), r"[A-Za-z0-9]{43,46}"),
    _token_rule("onepassword_token", ("ops_eyJ",), r"[A-Za-z0-9+/=_-]{100,2000}"),
    _token_rule("square_token", ("sq0atp-", "sq0csp-", "EAAA"), r"[A-Za-z0-9_-]{22,60}"),
    _token_rule("atlassian_token", ("ATATT3",), r"[A-Za-z0-9_=-]{50,300}"),
    _token_rule("mapbox_token", ("sk.eyJ", "pk.eyJ"), r"[A-Za-z0-9_-]{20,200}\.[A-Za-z0-9_-]{20,}"),
    _token_rule("alibaba_key", ("LTAI",), r"[A-Za-z0-9]{20}"),
    _token_rule("netlify_token", ("nfp_",), r"[A-Za-z0-9]{36}"),
    _token_rule("render_key", ("rnd_",), r"[A-Za-z0-9]{32}"),
    _token_rule("buildkite_token", ("bkua_",), r"[a-f0-9]{40}"),
    _token_rule("flyio_token", ("fo1_", "fm2_"), r"[A-Za-z0-9_+/=-]{40,2000}"),
    _token_rule("google_oauth_secret", ("GOCSPX-",), r"[A-Za-z0-9_-]{28}"),
    _token_rule("google_oauth_token", ("ya29.",), r"[A-Za-z0-9_-]{30,2048}"),
    # one rule per spelling where the spellings differ early: a single literal prefix
    # keeps the engine's fast search (an alternation tries every position of its first
    # character: 7x slower on a long run of it)
    *(
        _token_rule("docker_token", (p,), r"[A-Za-z0-9_-]{27,64}")
        for p in ("dckr_pat_", "dckr_oat_")
    ),
    _token_rule("langsmith_key", ("lsv2_",), r"(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    _token_rule("tavily_key", ("tvly-",), r"[A-Za-z0-9-]{20,64}"),
    _token_rule("dynatrace_token", ("dt0c01.",), r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    *(
        _token_rule("brevo_key", (p,), r"[a-f0-9]{64}-[A-Za-z0-9]{16}")
        for p in ("xkeysib-", "xsmtpsib-")
    ),
    _token_rule("planetscale_token", ("pscale_",), r"(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}"),
    _token_rule("prefect_key", ("pnu_",), r"[A-Za-z0-9]{36}"),
    _token_rule("rubygems_key", ("rubygems_",), r"[a-f0-9]{48}"),
    _token_rule("readme_key", ("rdme_",), r"[a-z0-9]{70}"),
    _token_rule("artifactory_key", ("AKCp",), r"[A-Za-z0-9]{69}"),
    _token_rule("easypost_key", ("EZ",), r"(?:AK|TK)[A-Za-z0-9]{54}"),
    _token_rule("shippo_token", ("shippo_",), r"(?:live|test)_[a-fA-F0-9]{40}"),
    _token_rule("duffel_token", ("duffel_",), r"(?:live|test)_[A-Za-z0-9_=-]{43}"),
    _token_rule("twilio_key", ("SK",), r"[0-9a-fA-F]{32}"),
    _token_rule("huggingface_org_token", ("api_org_",), r"[A-Za-z]{34}"),
    _token_rule("openshift_token", ("sha256~",), r"[A-Za-z0-9_-]{43}"),
    _token_rule("clojars_token", ("CLOJARS_",), r"[a-z0-9]{60}"),
    _token_rule("typeform_token", ("tfp_",), r"[A-Za-z0-9_.=-]{59}"),
    _token_rule("infracost_token", ("ico-",), r"[A-Za-z0-9]{32}"),
    _token_rule("scalingo_token", ("tk-us-",), r"[A-Za-z0-9_-]{48}"),
    _token_rule("frameio_token", ("fio-u-",), r"[A-Za-z0-9_=-]{64}"),
    _token_rule("cloudflare_origin_ca_key", ("v1.0-",), r"[a-f0-9]{24}-[a-f0-9]{146}"),
)


_SECRET_WORDS = _cased("pass", "pwd", "pw", "secret", "token", "key", "auth", "credential")
_PEM_END = r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        ("-----begin",),
        re.compile(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            rf"(?:.*?{_PEM_END}|(?:[A-Za-z0-9+/=:,.\- \t\r\n]|\\[nrt])*)",
            re.DOTALL,
        ),
        lambda m: _marker("private_key"),
    ),
    _Rule(
        "gcp_service_account_key",
        ("private_key_id",),
        re.compile(r"""private_key_id\\?["']?\s*[:=]\s*\\?["']?(?P<secret>[0-9a-fA-F]{40})"""),
        _whole("gcp_service_account_key", left=frozenset()),
    ),
    _Rule(
        "aws_access_key",
        ("akia", "asia", "abia", "acca"),
        re.compile(r"(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Za-z0-9])"),
        _whole("aws_access_key"),
    ),
    _Rule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(
            r"(?P<secret>(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251}))"
            r"(?![A-Za-z0-9])"
        ),
        _whole("github_token", check=lambda s: _looks_random(s.split("_", 1)[1])),
    ),
    _Rule(
        "slack_webhook",
        ("hooks.slack.com/",),
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]*?"
            r"(?P<secret>[A-Za-z0-9]{16,})(?![A-Za-z0-9])"
        ),
        _whole("slack_webhook", left=frozenset()),
    ),
    _Rule(
        "discord_webhook",
        ("/api/webhooks/",),
        re.compile(r"/api/webhooks/\d+/(?P<secret>[A-Za-z0-9_-]{20,})"),
        _whole("discord_webhook", left=frozenset()),
    ),
    _Rule(
        "slack_token",
        ("xox", "xapp-"),
        re.compile(r"(?P<secret>(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,})"),
        _whole("slack_token", check=lambda s: _looks_random(s[5:])),
    ),
    _Rule(
        "anthropic_key",
        ("sk-ant-",),
        re.compile(r"(?P<secret>sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{20,})"),
        _whole("anthropic_key", left=_WORD_DASH),
    ),
    _Rule(
        "openai_key",
        ("sk-",),
        re.compile(r"(?P<secret>sk-(?!ant-)(?:[a-z]+-)?[A-Za-z0-9_-]{20,})"),
        _whole(
            "openai_key", check=lambda s: _looks_random(s[3:]) and "--" not in s, left=_WORD_DASH
        ),
    ),
    _Rule(
        "stripe_key",
        ("k_live_", "k_test_"),
        re.compile(r"(?P<secret>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})"),
        _whole("stripe_key"),
        literal_prefix=False,
    ),
    _Rule(
        "webhook_secret",
        ("whsec_",),
        re.compile(r"(?P<secret>whsec_[A-Za-z0-9+/=]{20,})"),
        _whole("webhook_secret"),
    ),
    _Rule(
        "google_api_key",
        ("aiza",),
        re.compile(r"(?P<secret>AIza[0-9A-Za-z_-]{35})(?![\w-])"),
        _whole("google_api_key", left=_WORD_DASH),
    ),
    _Rule(
        "npm_token",
        ("npm_",),
        re.compile(r"(?P<secret>npm_[A-Za-z0-9]{36})(?![A-Za-z0-9])"),
        _whole("npm_token", check=lambda s: _looks_random(s[4:])),
    ),
    _Rule(
        "pypi_token",
        ("pypi-ag",),
        re.compile(r"(?P<secret>pypi-Ag[A-Za-z0-9_-]{50,})"),
        _whole("pypi_token"),
    ),
    _Rule(
        "huggingface_token",
        ("hf_",),
        re.compile(r"(?P<secret>hf_[A-Za-z0-9]{30,})(?![A-Za-z0-9])"),
        _whole("huggingface_token", check=lambda s: _looks_random(s[3:])),
    ),
    _Rule(
        "jwt",
        ("eyj",),
        re.compile(r"(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"),
        _whole("jwt", left=_WORD_DASH),
    ),
    *_PROVIDER_TOKENS,
    _Rule(
        "azure_client_secret",
        ("q~",),
        re.compile(r"(?P<secret>[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])"),
        _whole("azure_client_secret", left=_WORD | {"~", "."}),
        literal_prefix=False,
    ),
    _Rule(
        "terraform_token",
        (".atlasv1.",),
        re.compile(
            r"(?P<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70})(?![A-Za-z0-9_=-])"
        ),
        _whole("terraform_token"),
        literal_prefix=False,
    ),
    _Rule(
        "telegram_bot_token",
        (":aa",),
        re.compile(r"(?P<secret>\d{8,10}:AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"),
        _whole("telegram_bot_token", left=_ALNUM),
        literal_prefix=False,
    ),
    _Rule(
        "azure_storage_key",
        ("accountkey=", "sharedaccesskey="),
        re.compile(r"(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
        _whole("azure_storage_key"),
        literal_prefix=False,
    ),
    _Rule(
        "url_signature",
        ("sig=", "signature="),
        re.compile(r"(?:sig|[Ss]ignature)=(?P<secret>[^&\s\"'#\\]{16,})"),
        _whole("url_signature", left=frozenset(_ALNUM - set("0123456789"))),
        literal_prefix=False,
    ),
    _Rule(
        "url_password",
        ("://",),
        re.compile(r"://[^\s:/@\"'<>]*:(?P<secret>[^\s@/\"'<>]+)@"),
        _whole("url_password", left=frozenset()),
    ),
    _Rule(
        "authorization",
        ("authorization",),
        re.compile(
            _cased("authorization") + r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*"
            r"(?:(?P<scheme>(?i:bearer|basic|token|bot|digest|apikey|negotiate|sso-key|ssws|dpop"
            r"|aws4-hmac-sha256|hoba|mutual|vapid|scram-sha-256|scram-sha-1|gnap|privatetoken"
            r"|splunk|geniekey))[ \t]+)?"
            r"(?P<cred>[^\s\"'\\,;]+(?:,[ \t]*[^\s\"'\\,;]+)*)"
        ),
        _authorization,
        literal_prefix=False,
    ),
    _Rule(
        "bearer_token",
        ("bearer",),
        re.compile(_cased("bearer") + r"[ \t]+(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)"),
        _whole("bearer_token", check=_looks_random, left=_WORD),
        literal_prefix=False,
    ),
    _Rule(
        "curl_user",
        ("-u",),  # also in "--user"
        re.compile(r"(?:-u|--user)(?:[ \t]+|=)[\"']?(?P<user>[^\s:\"'\[]*):(?P<pw>[^\s\"'\[]+)"),
        _curl_user,
    ),
    _Rule(
        "netrc_password",
        ("machine",),
        re.compile(
            r"machine\s{1,40}\S{1,300}\s{1,40}login\s{1,40}\S{1,300}\s{1,40}"
            r"password\s{1,40}(?P<secret>\S{1,500})"
        ),
        _whole("password_assignment", left=_WORD),
    ),
    _Rule(
        "cli_password",
        (" -p", "\t-p"),  # every match holds one; rarer than the program names
        re.compile(
            r"(?:(?:mysql(?:dump|admin)?|mariadb(?:-dump)?)(?:[ \t]+(?!-p)[^\s|;&]{1,200}){0,8}"
            r"[ \t]+-p|sshpass[ \t]+-p[ \t]*"
            r"|docker[ \t]+login(?:[ \t]+(?!-p[ \t])[^\s|;&]{1,200}){0,8}[ \t]+-p[ \t]+)"
            r"[\"']?(?P<secret>[^\s\"'-][^\s\"']{0,500})"
        ),
        _whole("password_assignment", left=_WORD_DASH),
        literal_prefix=False,  # an alternation of words: tried only when one occurs
    ),
    _Rule(
        "assignment",
        ("pass", "pw", "secret", "token", "key", "auth", "credential"),
        re.compile(
            _SECRET_WORDS
            + r"(?![sS](?![a-zA-Z]))(?P<name>[\w.-]*)\\?[\"']?[ \t]*[:=][ \t]*"
            + _VALUE,
            re.VERBOSE,
        ),
        _assignment,
        literal_prefix=False,
        anchored=True,  # the pattern starts at the secret word (``_cased`` forms)
    ),
    _Rule(
        "flag",
        ("--",),
        re.compile(
            r"--(?P<name>[\w-]*" + _SECRET_WORDS + r"[\w-]*)[ \t]+" + _VALUE,
            re.VERBOSE,
        ),
        _flag,
    ),
)


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------
