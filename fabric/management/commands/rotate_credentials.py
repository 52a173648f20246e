"""`manage.py rotate_credentials`: re-encrypt every fabric manager's credentials with the
newest key of COMPOSER_CREDENTIALS_KEYS (see docs/configuration.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from fabric.credentials import BadCredentialsKey, NoCredentialsKey
from fabric.services.managers.rotate import credentials_rotate, secret_rotations


class Command(BaseCommand):
    help = (
        "Re-encrypt every fabric manager's credentials with the first (newest) key of "
        "COMPOSER_CREDENTIALS_KEYS. Keep the old keys listed after it until this has run."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = credentials_rotate()
        except (NoCredentialsKey, BadCredentialsKey) as exc:
            raise CommandError(f"Nothing was re-encrypted: {exc}.") from None
        self.stdout.write(
            f"Re-encrypted the credentials of {len(result.rotated)} fabric manager(s)"
            + (f": {', '.join(result.rotated)}." if result.rotated else ".")
        )
        unreadable = [f"fabric manager {name}" for name in result.unreadable]
        for what, rotate in secret_rotations().items():
            done = rotate()
            self.stdout.write(f"Re-encrypted {len(done.rotated)} {what}.")
            unreadable += done.unreadable
        if unreadable:
            raise CommandError(
                f"No configured key opens the secrets of {', '.join(unreadable)}: keep the "
                "key they were saved with in COMPOSER_CREDENTIALS_KEYS, or enter them again."
            )
