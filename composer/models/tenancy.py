"""Tenants and who belongs to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from composer.choices import Role
from fabric.models.base import TimeStampedModel
from fabric.validators import check_text_fields


class Tenant(TimeStampedModel):
    """An organisation that requests compositions; its data is invisible to every other tenant."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        check_text_fields(names={"name": self.name})


class Membership(TimeStampedModel):
    """A user's role in one tenant. A user may belong to several tenants."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=12, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="composer_membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"

    @property
    def can_write(self) -> bool:
        """Read-only members may look but not change anything."""
        return self.role != Role.READONLY
