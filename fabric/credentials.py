"""Fabric managers' credentials, encrypted at rest.

A manager's username and password (or token) are stored only as a Fernet token in
`FabricManager.credentials_ciphertext`, never in its settings, so a database dump, a backup
or the admin shows nothing a person could sign in with. The keys come from the environment
(`COMPOSER_CREDENTIALS_KEYS`: comma-separated Fernet keys, newest first), never from the
database: whoever holds the database without the keys holds nothing.

Keys rotate without a flag day: add a new key in front, run `manage.py rotate_credentials`
(every manager re-encrypted with the newest key), then drop the old one. `MultiFernet`
decrypts with any listed key and encrypts with the first.

Only `fabric.drivers.registry.manager_credentials` decrypts, when it builds a driver; the
plain values go nowhere else (not in pages, API answers, logs or audit rows).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from fabric.drivers.base import DriverError

if TYPE_CHECKING:
    from fabric.models import FabricManager

KEYS_SETTING = "COMPOSER_CREDENTIALS_KEYS"
# Which keys a credentials mapping may hold: a username and password, or a token.
CREDENTIAL_FIELDS = ("username", "password", "token")


class NoCredentialsKey(Exception):
    """No key is configured, so credentials can neither be saved nor read."""


class BadCredentialsKey(Exception):
    """A configured key is not a Fernet key (32 url-safe base64-encoded bytes)."""


def configured_keys() -> list[str]:
    """The keys from settings (COMPOSER_CREDENTIALS_KEYS), newest first, blanks dropped."""
    raw = getattr(settings, KEYS_SETTING, None) or []
    if isinstance(raw, str):
        raw = raw.split(",")
    return [str(key).strip() for key in raw if str(key).strip()]


def _fernet() -> MultiFernet:
    """The MultiFernet of the configured keys; raises NoCredentialsKey or BadCredentialsKey."""
    keys = configured_keys()
    if not keys:
        raise NoCredentialsKey(
            f"no encryption key is set ({KEYS_SETTING} is empty); whoever runs the console "
            "must set one before credentials can be saved or read"
        )
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key.encode()))
        except (ValueError, TypeError):
            # The key itself is never repeated in the message: it is a secret too.
            raise BadCredentialsKey(
                f"key number {position} in {KEYS_SETTING} is not a Fernet key "
                "(32 url-safe base64-encoded bytes, as `Fernet.generate_key()` makes)"
            ) from None
    return MultiFernet(fernets)


def check_keys() -> None:
    """Raise NoCredentialsKey or BadCredentialsKey unless the keys are usable."""
    _fernet()


def has_key() -> bool:
    """Whether credentials can be saved now (at least one key, all of them well formed)."""
    try:
        _fernet()
    except (NoCredentialsKey, BadCredentialsKey):
        return False
    return True


def encrypt(values: Mapping[str, str]) -> str:
    """The ciphertext of a credentials mapping, with the newest key.

    Raises NoCredentialsKey or BadCredentialsKey (the caller names the field).
    """
    plain = json.dumps(
        {key: str(values[key]) for key in CREDENTIAL_FIELDS if values.get(key)}, sort_keys=True
    )
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(manager: FabricManager) -> dict[str, str]:
    """`manager`'s credentials in plain text; {} when it has none.

    Raises a permanent DriverError naming the manager and the cause (no key, a malformed
    key, or a key that does not open them: the wrong key, or the key they were saved with
    was dropped before a rotation), so a job or a connection test says why instead of
    failing with a 500. Retrying cannot help until the keys are fixed.
    """
    ciphertext = manager.credentials_ciphertext
    if not ciphertext:
        return {}
    try:
        plain = _fernet().decrypt(ciphertext.encode())
    except (NoCredentialsKey, BadCredentialsKey) as exc:
        raise DriverError(
            f"The credentials of fabric manager {manager.name!r} cannot be decrypted: {exc}.",
            permanent=True,
        ) from None
    except InvalidToken:
        raise DriverError(
            f"The credentials of fabric manager {manager.name!r} cannot be decrypted: none of "
            f"the keys in {KEYS_SETTING} opens them (a wrong key, or the key they were saved "
            "with was removed). Set the key they were saved with, or enter the credentials "
            "again.",
            permanent=True,
        ) from None
    loaded = json.loads(plain)
    return {str(key): str(value) for key, value in loaded.items()}


def encrypt_text(plain: str) -> str:
    """The ciphertext of one secret string (a webhook's signing secret), with the newest key.

    The same keys as managers' credentials, so one rotation covers both. Raises
    NoCredentialsKey or BadCredentialsKey (the caller names the field).
    """
    return _fernet().encrypt(plain.encode()).decode()


def decrypt_text(ciphertext: str) -> str:
    """The plain text of `encrypt_text`'s ciphertext.

    Raises NoCredentialsKey, BadCredentialsKey, or InvalidToken when no configured key
    opens it; the caller says what could not be read, never the ciphertext.
    """
    return _fernet().decrypt(ciphertext.encode()).decode()


def reencrypt(ciphertext: str) -> str:
    """The same credentials encrypted with the newest key (`MultiFernet.rotate`).

    Raises NoCredentialsKey, BadCredentialsKey, or InvalidToken when no key opens them.
    """
    return _fernet().rotate(ciphertext.encode()).decode()


def scrub(text: str, values: Mapping[str, str]) -> str:
    """`text` with every credential value in `values` replaced by a mask.

    For messages that come back from a driver (a refused sign-in may echo what it was
    sent): whatever a driver says, the operator reads it without the secrets.
    """
    from fabric.secrets import MASK

    for value in sorted((v for v in values.values() if v), key=len, reverse=True):
        if len(value) >= 3:
            text = text.replace(value, MASK)
    return text
