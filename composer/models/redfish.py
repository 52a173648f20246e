"""Sessions of Composer's Redfish service (`composer.redfish`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RedfishSession(models.Model):
    """One Redfish login (`POST /redfish/v1/SessionService/Sessions`).

    The client holds the token (`X-Auth-Token`); the database holds only its SHA-256, so a
    copy of the table opens no session. `public_id` names the session resource, which its
    owner deletes to log out. A session unused for `SessionTimeout` seconds ends.
    """

    public_id = models.CharField(max_length=32, unique=True)
    token_sha256 = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="redfish_sessions"
    )
    auth_hash = models.CharField(
        max_length=128,
        help_text="The user's session hash at login: a password change ends the session.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField()
    remote_addr = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["last_used_at"], name="composer_rfsession_used")]

    def __str__(self) -> str:
        return f"Redfish session {self.public_id}"
