"""Redaction: real-format secrets go, context stays, look-alikes are left alone.

Secret-looking values are assembled from parts at runtime so secret scanners do not
flag this file; every value is made up.
"""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from features.redact.engine import _has_candidate, redact, redact_value, secret_name_kind

B62 = "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"  # 36 mixed characters
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GHP = "ghp_" + B62
GH_PAT = "github_pat_" + "11ABCDEFG0" + B62 + "_" + B62[:20]
SLACK = "xoxb-" + "1234567890-0987654321-" + B62[:24]
OPENAI = "sk-proj-" + B62 + "_" + B62 + "-T3Blbk"
OPENAI_OLD = "sk-" + B62 + "AbCd1234eFgH"
ANTHROPIC = "sk-ant-api03-" + B62 + B62 + "-" + B62[:20] + "AA"
STRIPE = "sk_" + "live_" + "51H" + B62[:24]
WHSEC = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
GOOGLE = "AIza" + "SyD-" + B62[:31]
NPM = "npm_" + B62
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + B62 + B62
HF = "hf_" + B62[:34]
PEM_BODY = "MIIEowIBAAKCAQEA" + B62 + "\n" + B62 + "Zm9vYmFy\n"
RSA_PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA PRIVATE KEY-----"
OPENSSH_PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "-----END OPENSSH PRIVATE KEY-----"
)
EC_PEM = "-----BEGIN EC PRIVATE KEY-----\n" + PEM_BODY + "-----END EC PRIVATE KEY-----"
PGP = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + PEM_BODY + "-----END PGP PRIVATE KEY BLOCK-----"
AZURE = "Zm9v" + B62 + B62[:10] + "=="
BEARER = "abc123" + B62
PASSWORD = "hunter2" + "Xy9"

# -- provider tokens: one made-up token per provider in its documented format ---------------

_RNG = random.Random(20261201)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_B64URL = _ALNUM + "-_"


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


# kind -> (prefix, random body): the body is what must not survive anywhere
PROVIDER_TOKENS: dict[str, tuple[str, str]] = {
    "aws_access_key": ("AKIA", _rand(16, string.ascii_uppercase + string.digits)),
    "github_classic": ("ghp_", _rand(36)),
    "github_fine_grained": ("github_pat_", _rand(22) + "_" + _rand(59)),
    "gitlab": ("glpat-", _rand(20)),
    "gitlab_runner": ("glrt-", _rand(20)),
    "slack_bot": ("xoxb-", "1234567890-" + _rand(24)),
    "stripe": ("sk_" + "live_", _rand(24)),
    "sendgrid": ("SG.", _rand(22, _B64URL) + "." + _rand(43, _B64URL)),
    "openai": ("sk-", _rand(48)),
    "openai_project": ("sk-proj-", _rand(64)),
    "anthropic": ("sk-ant-api03-", _rand(93) + "AA"),
    "google": ("AIza", _rand(35)),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJ", _rand(40) + "." + _rand(43)),
    "npm": ("npm_", _rand(36)),
    "pypi": ("pypi-AgEIcHlwaS5vcmc", _rand(60)),
    "huggingface": ("hf_", _rand(34)),
    "shopify": ("shpat_", _rand(32, _HEX)),
    "digitalocean": ("dop_v1_", _rand(64, _HEX)),
    "doppler": ("dp.pt.", _rand(43)),
    "linear": ("lin_api_", _rand(40)),
    "mailgun": ("key-", _rand(32, _HEX)),
    "heroku": ("HRKU-", _rand(60)),
    "sentry": ("sntrys_", _rand(60)),
    "grafana": ("glsa_", _rand(32) + "_" + _rand(8, _HEX)),
    "vault": ("hvs.", _rand(90)),
    "postman": ("PMAK-", _rand(24, _HEX) + "-" + _rand(34, _HEX)),
    "databricks": ("dapi", _rand(32, _HEX)),
    "newrelic": ("NRAK-", _rand(27, string.ascii_uppercase + string.digits)),
    "pulumi": ("pul-", _rand(40, _HEX)),
    "supabase": ("sbp_", _rand(40, _HEX)),
    "groq": ("gsk_", _rand(52)),
    "xai": ("xai-", _rand(80)),
    "replicate": ("r8_", _rand(37)),
    "notion": ("ntn_", _rand(46)),
    "square": ("EAAA", _rand(60, _B64URL)),
    "azure_client_secret": (_rand(3) + "8Q~", _rand(34)),
    "telegram_bot": ("123456789:AA", _rand(33)),
    "age": ("AGE-SECRET-KEY-1", _rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
    # formats from the providers' documentation (and gitleaks' rules)
    "google_oauth_secret": ("GOCSPX-", _rand(28, _B64URL)),
    "google_oauth_token": ("ya29.a0", _rand(150, _B64URL)),
    "docker_pat": ("dckr_pat_", _rand(27, _B64URL)),
    "langsmith": ("lsv2_pt_", _rand(32, _HEX) + "_" + _rand(10, _HEX)),
    "tavily": ("tvly-", _rand(32)),
    "dynatrace": (
        "dt0c01.",
        _rand(24, string.ascii_uppercase + string.digits)
        + "."
        + _rand(64, string.ascii_uppercase + string.digits),
    ),
    "brevo": ("xkeysib-", _rand(64, _HEX) + "-" + _rand(16)),
    "planetscale": ("pscale_tkn_", _rand(43)),
    "prefect": ("pnu_", _rand(36)),
    "rubygems": ("rubygems_", _rand(48, _HEX)),
    "artifactory": ("AKCp", _rand(69)),
    "easypost": ("EZAK", _rand(54)),
    "shippo": ("shippo_live_", _rand(40, _HEX)),
    "twilio_api_key": ("SK", _rand(32, _HEX)),
    "huggingface_org": ("api_org_", _rand(34, string.ascii_letters)),
    "openshift": ("sha256~", _rand(43, _B64URL)),
    "terraform_cloud": (_rand(14).lower() + ".atlasv1.", _rand(67).lower()),
    "cloudflare_origin_ca": ("v1.0-", _rand(24, _HEX) + "-" + _rand(146, _HEX)),
    "stripe_restricted": ("rk_" + "live_", _rand(99)),
    "slack_app": (
        "xapp-1-",
        "A"
        + _rand(10, string.ascii_uppercase + string.digits)
        + "-"
        + _rand(13, string.digits)
        + "-"
        + _rand(64, _HEX),
    ),
    "aws_temporary": ("ASIA", _rand(16, string.ascii_uppercase + "234567")),
    "anthropic_admin": ("sk-ant-admin01-", _rand(93, _B64URL) + "AA"),
    "openai_service_account": ("sk-svcacct-", _rand(64, _B64URL)),
    "private_key_openssh": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
        _rand(70, _ALNUM + "+/") + "\n" + _rand(40) + "\n-----END OPENSSH PRIVATE KEY-----",
    ),
    "private_key_pem": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA",
        _rand(64, _ALNUM + "+/") + "\n" + _rand(40) + "\n-----END RSA PRIVATE KEY-----",
    ),
}
"""Recognised by format wherever they appear."""

# Secrets that only their context gives away: (text with ``{s}``, the secret)
CONTEXT_SECRETS: dict[str, tuple[str, str]] = {
    "basic_auth_url": ("https://deploy:{s}@git.example.com/o/r.git", _rand(18)),
    "bearer_header": ("Authorization: Bearer {s}", _rand(40)),
    "azure_storage": ("AccountName=acct;AccountKey={s};EndpointSuffix=x", _rand(86) + "=="),
    "twilio_auth": ("TWILIO_AUTH_TOKEN={s}", _rand(32, _HEX)),
    "datadog": ("DD_API_KEY={s}", _rand(32, _HEX)),
    "discord_bot": (
        "Authorization: Bot {s}",
        "M" + _rand(25) + "." + _rand(6) + "." + _rand(38, _B64URL),
    ),
    "curl_user": ("curl -u admin:{s} https://ci.example.com", _rand(16)),
    "password_env": ("PGPASSWORD={s} psql -h db", _rand(14)),
    "url_signature": ("https://b.example.com/o?sig={s}&x=1", _rand(40)),
    "okta_ssws": (
        "curl -H 'Authorization: SSWS {s}' https://acme.okta.com/api/v1/users",
        "00" + _rand(40, _B64URL),
    ),
    "netrc": ("machine api.heroku.com\n  login me@example.com\n  password {s}\n", _rand(36)),
    "mysql_p": ("mysqldump -h db -u app -p{s} shop > shop.sql", _rand(14)),
    "sshpass": ("sshpass -p '{s}' ssh deploy@host", _rand(14)),
    "docker_login": ("docker login -u bot -p {s} registry.example.com", _rand(20)),
    "aws_credentials_ini": ("[default]\naws_secret_access_key = {s}\n", _rand(30) + "/" + _rand(9)),
    "aws_session_token": ("export AWS_SESSION_TOKEN={s}", "IQoJb3JpZ2luX2Vj" + _rand(120)),
    "dotenv_secret": ("NODE_ENV=production\nJWT_SECRET={s}\nPORT=8080", _rand(32)),
    "azure_sql": ("Server=tcp:db.database.windows.net,1433;User ID=app;Password={s};", _rand(16)),
    "mongodb_srv": ("mongodb+srv://app:{s}@cluster0.ab1cd.mongodb.net/prod", _rand(16)),
    "docker_config_auth": ('{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}', _rand(40)),
}

LOOK_ALIKES = [
    "9fceb02d0ae598e95dc970b74767f19372d61af8",  # git SHA
    "123e4567-e89b-12d3-a456-426614174000",  # UUID
    "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "glpat-xxxxxxxxxxxxxxxxxxxx",
    "<your-token>",
    "sha512-Q5bVh0yTZ1xUtJ6Zn1bK3j0uQ2y8HcA9ZkLmN0pQrStUvWxYz==",  # lockfile integrity
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256
    "${OPENAI_API_KEY}",
    "tvly-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "ya29.example",
    "v1.0-rc1",
    "SKIP_SLOW_TESTS",
    "mysql -u root -p shop",  # -p alone: mysql prompts
    "docker login --password-stdin",
    "machine learning password reset",
]


def provider_secret(kind: str) -> str:
    prefix, body = PROVIDER_TOKENS[kind]
    return prefix + body


def needles(secret: str) -> list[str]:
    """The secret and distinctive 10-character windows of it: a partial redaction that
    leaves the tail (or the head) behind is still a leak."""
    body = secret.replace("\n", "")
    step = max(1, (len(body) - 10) // 4)
    return [secret, *{body[i : i + 10] for i in range(0, max(1, len(body) - 9), step)}]


@pytest.mark.parametrize("kind", sorted(PROVIDER_TOKENS))
def test_provider_tokens_are_redacted_bare_and_in_context(kind: str) -> None:
    secret = provider_secret(kind)
    body = PROVIDER_TOKENS[kind][1]
    for text in (secret, f"deploy --verbose {secret} now", f'{{"note": "{secret}"}}'):
        out = redact(text)
        assert body not in out and body[-12:] not in out, (kind, out)
        assert "[REDACTED:" in out


@pytest.mark.parametrize("kind", sorted(CONTEXT_SECRETS))
def test_context_secrets_are_redacted(kind: str) -> None:
    template, secret = CONTEXT_SECRETS[kind]
    out = redact(template.format(s=secret))
    assert secret not in out and secret[-12:] not in out, (kind, out)


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_provider_look_alikes_survive(text: str) -> None:
    assert redact(f"see {text} here") == f"see {text} here"


# (text, the secret that must vanish, context that must stay)
SECRETS: list[tuple[str, str, str]] = [
    # ``pw`` names a password as ``password`` does (secret_name_kind): in text too
    (f"export DB_PW={PASSWORD}", PASSWORD, "export DB_PW="),
    (f"mysql_pw: {PASSWORD}", PASSWORD, "mysql_pw: "),
    (f"aws configure set aws_access_key_id {AWS_KEY}", AWS_KEY, "aws configure set"),
    (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "export AWS_SECRET_ACCESS_KEY="),
    (f"git push https://{GHP}@github.com/o/r", GHP, "@github.com/o/r"),
    (f'{{"token": "{GH_PAT}"}}', GH_PAT, '{"token": "'),
    (f"SLACK_BOT_TOKEN={SLACK} python bot.py", SLACK, "python bot.py"),
    (f"client = OpenAI(api_key='{OPENAI}')", OPENAI, "client = OpenAI(api_key='"),
    (f"OPENAI_API_KEY={OPENAI_OLD}", OPENAI_OLD, "OPENAI_API_KEY="),
    (f"x-api-key: {ANTHROPIC}", ANTHROPIC, "x-api-key: "),
    (f"stripe.api_key = '{STRIPE}'", STRIPE, "stripe.api_key = '"),
    (f"STRIPE_WEBHOOK_SECRET={WHSEC}", WHSEC, "STRIPE_WEBHOOK_SECRET="),
    (f"session cookie {JWT} expired", JWT, "session cookie"),
    (f"https://maps.googleapis.com/maps/api/geocode/json?key={GOOGLE}", GOOGLE, "maps.googleapis"),
    (f"//registry.npmjs.org/:_authToken={NPM}", NPM, "//registry.npmjs.org/:_authToken="),
    (f"twine upload -u __token__ -p {PYPI} dist/*", PYPI, "dist/*"),
    (f"huggingface-cli login --token {HF}", HF, "huggingface-cli login --token"),
    (f"cat id_rsa\n{RSA_PEM}\ndone", PEM_BODY.split()[0], "done"),
    (f"key:\n{OPENSSH_PEM}", B62 + "Zm9vYmFy", "key:"),
    (EC_PEM, "MIIEowIBAAKCAQEA", ""),
    (f"gpg --import <<EOF\n{PGP}\nEOF", "MIIEowIBAAKCAQEA", "gpg --import"),
    (
        '{"type": "service_account", "private_key_id": "' + "0123456789abcdef" * 2 + "01234567"
        '", "private_key": "' + RSA_PEM.replace("\n", "\\n") + '"}',
        "0123456789abcdef0123456789abcdef01234567",
        '"type": "service_account"',
    ),
    (
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE};EndpointSuffix=x",
        AZURE,
        "AccountName=acct;",
    ),
    (f"psql postgres://app:{PASSWORD}@db.internal:5432/app", PASSWORD, "postgres://app:"),
    (f"redis-cli -u redis://:{PASSWORD}@cache:6379/0", PASSWORD, "@cache:6379/0"),
    (f'curl -H "Authorization: Bearer {BEARER}" https://api.x.io', BEARER, "https://api.x.io"),
    (f"Authorization: Basic {'dXNlcjpwYXNz' + 'd29yZA=='}", "dXNlcjpwYXNzd29yZA==", "Basic"),
    (f"curl -u admin:{PASSWORD} https://jenkins.local/api", PASSWORD, "curl -u admin:"),
    (f"mysqladmin --password={PASSWORD} status", PASSWORD, "mysqladmin --password="),
    (f"vault login --password {PASSWORD} -method=userpass", PASSWORD, "-method=userpass"),
    (f"PGPASSWORD={PASSWORD} psql -h db -U app", PASSWORD, "psql -h db -U app"),
    (f'{{"api_key": "{PASSWORD}", "model": "m"}}', PASSWORD, '"model": "m"'),
    (f"db:\n  password: {PASSWORD}\n  host: db", PASSWORD, "host: db"),
    (f'requests.get(u, headers={{"X-Api-Key": "{PASSWORD}"}})', PASSWORD, '"X-Api-Key": "'),
    (f"https://s3.example.com/b/o?X-Amz-Signature={'ab12' * 16}&x=1", "ab12" * 16, "&x=1"),
    (f'{{"client_secret": "{PASSWORD}"}}', PASSWORD, "client_secret"),
    (f"connect(password=\"{PASSWORD}\", user='u')", PASSWORD, "user='u'"),
    (f'{{\\"password\\": \\"{PASSWORD}\\"}}', PASSWORD, '\\"password\\"'),
    ("https://hooks.slack.com/services/T000/B000/" + "XXXXa1b2c3d4e5f6g7h8", "a1b2c3d4e5", "T000"),
]


@pytest.mark.parametrize(("text", "secret", "context"), SECRETS)
def test_secret_removed_and_context_kept(text: str, secret: str, context: str) -> None:
    out = redact(text)
    assert secret not in out
    assert context in out
    assert "[REDACTED:" in out


def test_kinds_name_the_secret() -> None:
    assert redact(AWS_KEY) == "[REDACTED:aws_access_key]"
    assert redact(GHP) == "[REDACTED:github_token]"
    assert redact(ANTHROPIC) == "[REDACTED:anthropic_key]"
    assert redact(OPENAI) == "[REDACTED:openai_key]"
    assert redact(JWT) == "[REDACTED:jwt]"
    assert redact(RSA_PEM) == "[REDACTED:private_key]"
    assert (
        redact(f"Authorization: Bearer {BEARER}") == "Authorization: Bearer [REDACTED:bearer_token]"
    )
    assert redact(f"ssh://deploy:{PASSWORD}@h") == "ssh://deploy:[REDACTED:url_password]@h"
    assert redact(f"password={PASSWORD}") == "password=[REDACTED:password_assignment]"


def test_truncated_private_key_is_still_removed() -> None:
    text = "-----BEGIN PRIVATE KEY-----\n" + PEM_BODY[:40]
    assert redact(text) == "[REDACTED:private_key]"


NOT_SECRETS = [
    "git checkout 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    '"integrity": "sha512-' + "Q5bVh0yTZ1xUtJ6Zn1bK3j0uQ2y8Hc" + '=="',
    'hash = "sha256:' + "ab" * 32 + '"',
    "Click 'Forgot password' to reset your password.",
    "max_tokens=4096, tokens_in: 1200, total_tokens: 5300",
    '{"max_tokens": 1024, "token_count": 87, "next_page_token": "CiAKGjBhY2Rl"}',
    "cat /home/user/.config/app/settings.json",
    "curl https://api.github.com/repos/o/r/pulls?state=open&per_page=100",
    "The API uses Bearer authentication; send a Bearer token in the header.",
    "export OPENAI_API_KEY=sk-...",
    'api_key = "<YOUR_API_KEY>"',
    "OPENAI_API_KEY=${OPENAI_API_KEY} python run.py",
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com',
    'api_key = os.environ["API_KEY"]',
    "def login(username: str, password: str) -> Session:",
    "token = get_token(scope)",
    "client = Client(api_key=api_key, timeout=30)",
    "password: ${DB_PASSWORD}",
    "docker login --password-stdin < pw.txt",
    "docker run -u 1000:1000 -v /src:/src img",
    "password: ********",
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "TOKEN_URL=https://oauth2.googleapis.com/token",
    "secret_name: prod/db",
    "huggingface_hub.hf_hub_download(repo_id='x')",
    "risk-assessment-for-production-environments-v2",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "ssh git@github.com and https://example.com/path?q=1",
    "password_reset_url: https://x.io/reset",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_unchanged(text: str) -> None:
    assert redact(text) == text


def test_a_key_naming_a_secret_is_blanked_however_deep_with_nothing_else_to_find() -> None:
    # no rule's trigger in the whole value but the key's own word: the scan of a
    # container's JSON for triggers must not let it through
    nested = {"cfg": {"db_pw": PASSWORD}, "ids": list(range(20))}
    assert redact_value(nested) == {
        "cfg": {"db_pw": "[REDACTED:password_assignment]"},
        "ids": list(range(20)),
    }
    assert PASSWORD not in redact(str(nested))


@pytest.mark.parametrize(
    "name",
    [
        "db_pw",
        "X-PW",
        "userPwd",
        "PGPASSWORD",
        "passphrase",
        "client_secret",
        "GITHUB_TOKEN",
        "apiKey",
        "private_key",
        "Authorization",
        "aws_credential",
        "x_auth",
    ],
)
def test_every_secret_name_holds_a_trigger(name: str) -> None:
    # what lets a container with no trigger in its JSON skip the walk (_may_hold_secret)
    assert secret_name_kind(name) is not None
    assert _has_candidate(name.lower())


def test_redact_value_deep_and_by_key() -> None:
    args = {
        "headers": {"Authorization": f"Bearer {BEARER}", "Accept": "application/json"},
        "password": "correct horse battery",
        "db": [{"dsn": f"postgres://u:{PASSWORD}@h/db", "port": 5432}],
        "api_key": "${API_KEY}",
        "token": "",
        "secret": True,
        "max_tokens": 100,
    }
    out = redact_value(args)
    assert out == {
        "headers": {
            "Authorization": "Bearer [REDACTED:bearer_token]",
            "Accept": "application/json",
        },
        "password": "[REDACTED:password_assignment]",
        "db": [{"dsn": "postgres://u:[REDACTED:url_password]@h/db", "port": 5432}],
        "api_key": "${API_KEY}",
        "token": "",
        "secret": True,
        "max_tokens": 100,
    }
    assert args["password"] == "correct horse battery"  # input not mutated


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("DB_PASSWORD", "password_assignment"),
        ("apiKey", "api_key_assignment"),
        ("AWS_SECRET_ACCESS_KEY", "api_key_assignment"),
        ("client_secret", "api_key_assignment"),
        ("refresh_token", "api_key_assignment"),
        ("private_key", "api_key_assignment"),
        ("max_tokens", None),
        ("token_count", None),
        ("next_page_token", None),
        ("key", None),
        ("password_policy", None),
        ("no-password", None),
    ],
)
def test_secret_name_kind(name: str, kind: str | None) -> None:
    assert secret_name_kind(name) == kind


text_like = st.lists(
    st.sampled_from(
        [
            *"abcxyzAKIQ0129_-=:/@.\"' \n\\$[]{}",
            "password",
            "token",
            "Bearer ",
            "://",
            "sk-",
            "ghp_",
            "AKIA",
            "-----BEGIN ",
            "PRIVATE KEY-----",
            "[REDACTED:x]",
            "--password ",
            "Authorization: ",
            "-u ",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=200), text_like))
def test_redact_properties(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    if "[REDACTED:" not in once:
        assert once == text  # nothing found: nothing changed, never longer


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | text_like,
        lambda c: st.lists(c) | st.dictionaries(text_like, c),
        max_leaves=20,
    )
)
def test_redact_value_never_raises(obj: object) -> None:
    assert redact_value(redact_value(obj)) == redact_value(obj)


# -- the prefilter: triggers, the one-scan candidate check, trigger-anchored matching ------

_FORMAT_SECRETS = [
    AWS_KEY,
    GHP,
    GH_PAT,
    SLACK,
    OPENAI,
    OPENAI_OLD,
    ANTHROPIC,
    STRIPE,
    WHSEC,
    JWT,
    GOOGLE,
    NPM,
    PYPI,
    HF,
    RSA_PEM,
    PGP,
    RSA_PEM[:60],
    RSA_PEM.replace("\n", "\\n"),
    "hooks.slack.com/services/T000/B000/" + B62[:24],
    "https://discord.com/api/webhooks/123456/" + B62,
    "private_key_id" + '": "' + "0123456789abcdef" * 2 + "01234567",
    "AccountKey=" + AZURE,
    "SharedAccessKey=" + AZURE,
    "https://x.blob.core.windows.net/c?sv=1&sig=" + B62[:20],
    "X-Amz-Signature=" + B62[:30],
    "postgres://app:" + PASSWORD + "@db:5432/x",
    "Authorization: Bearer " + BEARER,
    "AUTHORIZATION=Basic " + BEARER,
    "bearer " + BEARER,
    "curl -u admin:" + PASSWORD + " https://x",
    "curl --user=admin:" + PASSWORD,
    "DB_PASSWORD=" + PASSWORD,
    'PGPASSWORD: "' + PASSWORD + '"',
    "client_Secret = '" + PASSWORD + "'",
    "X-Api-Key: " + BEARER,
    '{\\"token\\": \\"' + PASSWORD + '\\"}',
    "--password " + PASSWORD,
    "--api-token=" + PASSWORD,
    "Credential=" + PASSWORD,
    "[REDACTED: password=" + PASSWORD + " ]",
    "[REDACTED:api_key] token=" + PASSWORD,
    *(provider_secret(kind) for kind in sorted(PROVIDER_TOKENS)),
]
_NOISE = st.text(
    alphabet=st.sampled_from([*"aAkKsSeEyYtTpP-_:=/@.\"' \n\\|&;", "\u0130", "\u212a", "ß", "é"]),
    max_size=30,
)
_embedded = st.builds(
    lambda a, s, b: a + s + b,
    _NOISE,
    st.sampled_from(_FORMAT_SECRETS) | text_like,
    _NOISE,
)


def _full_pass(text: str) -> str:
    """A redaction pass without any prefilter: every rule's ``re.sub`` on the whole text."""
    from features.redact.rules import _RULES

    for rule in _RULES:
        text = rule.pattern.sub(rule.replace, text)
    return text


def _full_redact(text: str) -> str:
    from features.redact.engine import _MAX_PASSES

    for _ in range(_MAX_PASSES):
        redacted = _full_pass(text)
        if redacted == text:
            break
        text = redacted
    return text


@pytest.mark.parametrize("secret", _FORMAT_SECRETS)
def test_format_secrets_pass_the_prefilter(secret: str) -> None:
    from features.redact.engine import _CANDIDATE_RE, _lower

    assert _CANDIDATE_RE.search(_lower(secret)) is not None
    assert redact(secret) == _full_redact(secret) != secret


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_embedded, text_like, st.text(max_size=120)))
def test_prefilter_never_skips_what_the_full_patterns_catch(text: str) -> None:
    from features.redact.engine import _CANDIDATE_RE, _RULES, _lower

    low = _lower(text)
    for rule in _RULES:
        for m in rule.pattern.finditer(text):
            # every match holds one of its rule's triggers, and the one scan sees one
            assert any(t in _lower(m.group(0)) for t in rule.triggers), (rule.name, m)
            assert _CANDIDATE_RE.search(low) is not None
            if rule.anchored:
                assert any(low.startswith(t, m.start()) for t in rule.triggers), rule.name
    assert redact(text) == _full_redact(text)


def test_trigger_anchored_matching_is_re_sub() -> None:
    from features.redact.engine import _RULES, _lower, _sub_at_triggers

    text = (
        "token=a PASSWORD=b password_reset=x key: k1 KEY=k2 auth='z' Secret=s secrets=no "
        "api_key=api_key credential:'c' tokentoken=t pwd=${P} passpass=p2 "
    ) * 3
    for rule in _RULES:
        if rule.anchored:
            assert _sub_at_triggers(rule, text, _lower(text)) == rule.pattern.sub(
                rule.replace, text
            )


def test_a_big_text_redacted_again_is_redacted_again_not_returned_from_memory() -> None:
    """Big texts that come back unchanged are remembered (the gate redacts each field a
    second time); the memory holds only such final texts, never an input that had a
    secret in it, and is bounded in size."""
    from features.redact import engine as module

    secret = "ghp_" + "Zq7" * 12
    big = "x" * 300_000 + " export GITHUB_TOKEN=" + secret
    first = redact(big)
    assert secret not in first
    assert redact(first) is first  # final: remembered, returned as it is
    assert secret not in redact(big)  # the input itself was never remembered
    for i in range(40):  # 40 x 300 KB: past the bound, the oldest go
        redact(f"{i} " + "y" * 300_000)
    assert sum(map(len, module._FINAL_LARGE)) <= module._LARGE_MEMO_MAX_CHARS


def test_the_trigger_scan_finds_what_the_regex_finds() -> None:
    """The Aho-Corasick scan reports every trigger occurrence the trie-shaped regex
    finds when tried at every position, in order (also with non-ASCII text before
    them: indexes are characters, not UTF-8 bytes), and a text with a lone surrogate,
    which the Rust side cannot take, is scanned by the regex."""
    from features.redact.engine import _CANDIDATE_RE, _SCAN_CHUNK, _SHORTEST_TRIGGERS, _occurrences

    def by_regex(low: str) -> list[tuple[int, int]]:
        out, at = [], 0
        while (m := _CANDIDATE_RE.search(low, at)) is not None:
            out.append((_SHORTEST_TRIGGERS.index(m.group()), m.start()))
            at = m.start() + 1
        return out

    rng = random.Random(7)
    pieces = [*_SHORTEST_TRIGGERS, "é", "İ", "\u2003", "x", "-", "_", " ", "\ud800", "😀"]
    for _ in range(400):
        low = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))).lower()
        assert list(_occurrences(low)) == by_regex(low), low
    # long texts are read in chunks: triggers across and at every chunk boundary
    for shift in range(-12, 3):
        low = "".join(
            "x" * (_SCAN_CHUNK * k + shift - 1) + " --user sk-" for k in (1, 2, 3)
        ).lower()
        assert list(_occurrences(low)) == by_regex(low), shift
    low = "".join(rng.choice(pieces) for _ in range(40_000)).lower()
    assert len(low) > 2 * _SCAN_CHUNK
    assert list(_occurrences(low)) == by_regex(low)


def test_a_long_text_is_scanned_once_and_tried_only_by_the_rules_its_triggers_name() -> None:
    """A 1 MiB field holding one credential costs one scan and the few rules its
    triggers name, not one ``sub`` per rule (~45, 0.13 s a MiB: the quoted ``curl``
    blob cost 0.77 s through the pipeline, mostly this); what it redacts is what every
    rule, pass after pass, redacts."""
    from features.redact.engine import _RULES, _lower, _rules_for

    secret = "ghp_" + "Zq7" * 12
    text = "curl -d '" + "x" * (1 << 20) + "' https://h.example/u -H 'x-key: " + secret + "'"
    low = _lower(text)
    candidate, rules = _rules_for(low)
    assert candidate
    assert 0 < len(rules) <= 8 < len(_RULES)
    assert redact(text) == _full_redact(text)
    assert secret not in redact(text)
