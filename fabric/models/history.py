"""The change history and audit trail of the physical world."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from fabric.choices import ChangeAction


class ChangeRecord(models.Model):
    """One change of something in the fabric: who (user or job), what, when, from where.

    `target_type` is the model's name ("device", "switch", ...), `changes` maps each field
    to its [before, after] values. Records are append-only; nothing ever deletes them.
    """

    target_type = models.CharField(max_length=30)
    target_id = models.BigIntegerField()
    target_label = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=12, choices=ChangeAction.choices)
    changes = models.JSONField(default=dict, blank=True)
    message = models.CharField(max_length=300, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=100, blank=True, help_text='e.g. "sync job 12", "admin".')
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["target_type", "target_id", "-at"], name="fabric_change_target")
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type} {self.target_label}"
