"""Key rotation: every manager's credentials re-encrypted with the newest key, and every
other secret encrypted with the same keys (the layer above registers its own: webhooks'
signing secrets, `register_secret_rotation`).

Run after putting a new key first in COMPOSER_CREDENTIALS_KEYS (the old ones still listed,
so the stored credentials still open); once it has run, the old keys can be dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.fernet import InvalidToken
from django.db import transaction

from fabric.choices import ChangeAction
from fabric.credentials import check_keys, reencrypt
from fabric.models import FabricManager
from fabric.services.history import change_record

logger = logging.getLogger(__name__)


@dataclass
class RotationResult:
    """Which managers were re-encrypted, and which could not be (no listed key opens them)."""

    rotated: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def credentials_rotate(
    *, actor: object = None, source: str = "rotate_credentials"
) -> RotationResult:
    """Re-encrypt every manager's credentials with the newest key, one row lock each.

    A manager whose credentials no configured key opens is left as it is and named in the
    result (its credentials must be entered again). Raises NoCredentialsKey or
    BadCredentialsKey (fabric.credentials) when the keys themselves are missing or
    malformed, before anything is written. Each re-encryption is audited, without values.
    """
    check_keys()
    result = RotationResult()
    ids = list(
        FabricManager.objects.exclude(credentials_ciphertext="")
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for pk in ids:
        with transaction.atomic():
            manager = FabricManager.objects.select_for_update().filter(pk=pk).first()
            if manager is None or not manager.credentials_ciphertext:
                continue
            try:
                rotated = reencrypt(manager.credentials_ciphertext)
            except InvalidToken:
                result.unreadable.append(manager.name)
                logger.warning("credentials of fabric manager %s: no configured key opens them", pk)
                continue
            manager.credentials_ciphertext = rotated
            manager.save(update_fields=["credentials_ciphertext", "updated_at"])
            change_record(
                manager,
                ChangeAction.CHANGED,
                {"credentials": ("stored", "re-encrypted with the newest key")},
                message="credentials re-encrypted with the newest key",
                actor=actor,
                source=source,
            ).save()
            result.rotated.append(manager.name)
    logger.info(
        "credentials rotated for %d managers (%d unreadable)",
        len(result.rotated),
        len(result.unreadable),
    )
    return result


# --- other secrets under the same keys ------------------------------------------------------

SecretRotation = Callable[[], RotationResult]
_ROTATIONS: dict[str, SecretRotation] = {}


def register_secret_rotation(what: str, rotate: SecretRotation) -> None:
    """Have `manage.py rotate_credentials` also run `rotate()`, which re-encrypts `what`
    (say, "webhook signing secrets") with the newest key (fabric never imports the layers
    that keep such secrets: they register here from their AppConfig.ready())."""
    _ROTATIONS[what] = rotate


def secret_rotations() -> dict[str, SecretRotation]:
    """The registered rotations, by what they re-encrypt."""
    return dict(_ROTATIONS)
