"""The write-ahead log's encryption at rest: AES-256-GCM, one key, from the environment or a
key file.

Why encrypt rather than redact: the log must give the pipeline, after a crash, the very
bytes it read the first time — a record fed again is recognised by the ids of the steps
it makes, and a replay of a recording must raise the live run's alerts. Redaction is not
transparent to the decoders (a secret spelled with JSON escapes is only found once
decoded; excerpts are cut at a length redaction changes; a dead letter's id hashes its
payload), so a redacted body could make other steps than the original did, and a protobuf
body cannot be redacted in place at all (its lengths would no longer match). So the log
keeps the request bodies whole, sealed: what reaches the disk is ciphertext, as useless
as the store's redacted text to whoever copies the folder, a backup or a freed disk block.

The key, in order of preference:

- ``TRAJWATCH_INBOUND_KEY`` (any secret of 16+ characters, e.g.
  ``python -c 'import secrets; print(secrets.token_urlsafe(32))'``; the AES key is its
  SHA-256): never on disk. The choice for a deployment whose disk or backups others read.
- otherwise a key file, ``inbound.key`` in the log's folder, 32 random bytes, mode 0600:
  it works with nothing to set up, and it is **rotated whenever the log holds nothing**
  (the folder is emptied as soon as its records are committed), so a key never outlives
  the records it sealed: a copy of a segment taken, or a block freed, before the rotation
  cannot be read after it. It does not protect a live log from someone who can read the
  folder — the folder's 0700 and the files' 0600 do that.

Nothing protects the log from the user ``serve`` runs as (that user can read its memory):
run the monitored agent as another user (``docs/security.md``).

A frame is sealed as ``nonce (12 bytes) | ciphertext | tag (16 bytes)`` with a random
nonce (fine for 2^32 frames under one key: four billion requests). A segment starts with
:data:`MAGIC` and the key's id (8 bytes of a hash of the key): a log opened with another
key is refused by name, before anything is read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from models.errors import ConfigError

__all__ = ["KEY_FILE", "MAGIC", "FrameCipher", "InvalidTag", "key_from_secret", "remove_key_file"]

MAGIC = b"TWWAL\x02\x00\x00"
"""The first bytes of an encrypted segment (a plaintext one, from before, starts with a
frame's length: never this, which would be a 1.1 GB frame)."""
KEY_FILE = "inbound.key"
MIN_SECRET_CHARS = 16
_NONCE = 12
_KEY_ID = 8


class FrameCipher:
    """Seals and opens the log's frames under one 32-byte key."""

    def __init__(self, key: bytes, *, source: str) -> None:
        if len(key) != 32:
            raise ValueError(f"the key must be 32 bytes, got {len(key)}")
        self._aead = AESGCM(key)
        self.key_id = hashlib.sha256(b"trajwatch inbound key id\x00" + key).digest()[:_KEY_ID]
        self.source = source
        """Where the key came from, for messages: the variable or the file."""

    @property
    def header(self) -> bytes:
        """What an encrypted segment starts with."""
        return MAGIC + self.key_id

    def seal(self, plaintext: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, plaintext, None)

    def open(self, sealed: bytes) -> bytes:
        """The plaintext; :class:`InvalidTag` if ``sealed`` was altered."""
        return self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], None)

    @classmethod
    def from_secret(cls, secret: str) -> FrameCipher:
        return cls(key_from_secret(secret), source="TRAJWATCH_INBOUND_KEY")

    @classmethod
    def from_key_file(cls, directory: Path, *, rotate: bool) -> FrameCipher:
        """The key in ``directory``'s key file, created (0600) if missing; a new one
        replaces it when ``rotate`` (the log holds nothing it sealed)."""
        path = directory / KEY_FILE
        if rotate or not path.exists():
            _write_key(path, os.urandom(32))
        key = path.read_bytes()
        if len(key) != 32:
            raise ConfigError(
                f"{path} is {len(key)} bytes, not the inbound log's 32-byte key; restore it, "
                "or move the folder away to start without the requests it holds"
            )
        return cls(key, source=str(path))


def key_from_secret(secret: str) -> bytes:
    """The AES key of ``TRAJWATCH_INBOUND_KEY``; ConfigError for a short secret."""
    if len(secret) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"TRAJWATCH_INBOUND_KEY is {len(secret)} characters, under {MIN_SECRET_CHARS}; "
            "generate one with python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return hashlib.sha256(b"trajwatch inbound log v2\x00" + secret.encode()).digest()


def remove_key_file(directory: Path) -> None:
    """Forget the key file's key (the log holds nothing it sealed)."""
    (directory / KEY_FILE).unlink(missing_ok=True)


def _write_key(path: Path, key: bytes) -> None:
    """``key`` into ``path``, mode 0600, atomically and durably."""
    temporary = path.with_name(path.name + ".new")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
