"""API tokens (`Authorization: Token <key>`), kept as digests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiTokenQuerySet(models.QuerySet[Any]):
    def live(self, now: datetime | None = None) -> ApiTokenQuerySet:
        """The tokens not expired at `now` (default: now)."""
        return self.exclude(expires_at__lte=now or timezone.now())


class ApiToken(models.Model):
    """One API token, issued by `POST /api/v1/auth/token/` (`composer.services.api_tokens`).

    The client holds the key; the database holds only its SHA-256, so a copy of the table
    (a backup, a replica, the admin) opens nothing. A key is 160 random bits, so one round
    of SHA-256 is enough: there is no password to guess behind it. `last_used_at` (None: not
    used since it was issued, or since it was carried over from an older release) lets the
    least recently used token go first when a user holds too many; `name` tells a user's
    tokens apart. A token with `expires_at` stops working then (None: it does not expire).
    """

    key_sha256 = models.CharField(max_length=64, unique=True)
    name = models.CharField(
        max_length=100, blank=True, help_text="What it is for: the script or machine holding it."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    remote_addr = models.GenericIPAddressField(
        null=True, blank=True, help_text="Where the request that issued it came from."
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["user", "last_used_at"], name="composer_apitoken_used")]

    def __str__(self) -> str:
        return f"API token {self.pk} of user {self.user_id}"
