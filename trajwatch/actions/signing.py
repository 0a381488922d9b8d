"""Standard Webhooks signing, with the ``standardwebhooks`` package.

``webhook-signature`` is ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, one
per secret, space-separated: during a key rotation the sender signs with the old and the
new ``whsec_`` secret and a receiver accepts either. Secrets come from the environment
(see :mod:`trajwatch.settings`), never from the config file.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from standardwebhooks import Webhook

from models.errors import ConfigError


def signers(secrets: Sequence[str], *, where: str) -> tuple[Webhook, ...]:
    """One signer per ``whsec_`` secret; a ConfigError naming ``where`` for a bad one."""
    found = []
    for secret in secrets:
        if not secret.startswith("whsec_"):
            raise ConfigError(
                f"{where}: a webhook secret must start with whsec_ (base64 after it); "
                'generate one with `python -c "import base64,os; '
                "print('whsec_' + base64.b64encode(os.urandom(24)).decode())\"`"
            )
        try:
            found.append(Webhook(secret))
        except Exception as exc:
            raise ConfigError(
                f"{where}: a webhook secret is not valid base64 after whsec_"
            ) from exc
    return tuple(found)


def headers(signing: Sequence[Webhook], msg_id: str, timestamp: int, body: str) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body`` sent as ``msg_id`` at
    ``timestamp`` (Unix seconds)."""
    moment = dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(s.sign(msg_id, moment, body) for s in signing),
    }
