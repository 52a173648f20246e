"""Templates (named request shapes, managed by operators) and tenants' quotas."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from composer.errors import SpecError
from composer.querysets import TenantScopedQuerySet
from composer.recurrence import schedule_normalise
from composer.specs import spec_normalise
from fabric.choices import DeviceKind
from fabric.kinds import find
from fabric.models.base import TimeStampedModel
from fabric.validators import check_text_fields


class Template(TimeStampedModel):
    """A named request shape ("training-8gpu", "inference-2gpu-bigmem").

    `spec` is a composition spec (see `composer.specs`), stored normalised: device items
    (kind, model, count, minima), memory_gib, storage_tb, cores, host_memory_gib,
    max_latency_ns, policy, same_switch, critical. Operators manage templates; tenants pick
    an active one or fill in a custom request. No lifecycle beyond `is_active`.
    """

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    spec = models.JSONField(default=dict)
    schedule = models.JSONField(
        default=dict,
        blank=True,
        help_text="When a booking from this template runs unless it says otherwise: "
        '{"recurrence": "weekdays", "starts": "08:00", "ends": "20:00", '
        '"time_zone": "Europe/Berlin"}. Empty: none.',
    )
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The name and description must be printable text (`fabric.validators`); the spec
        a valid request shape, stored normalised."""
        super().clean()
        check_text_fields(names={"name": self.name}, free_text={"description": self.description})
        try:
            self.spec = spec_normalise(self.spec)
        except SpecError as exc:
            raise ValidationError({"spec": exc.message}) from exc
        try:
            self.schedule = schedule_normalise(self.schedule)
        except SpecError as exc:
            raise ValidationError({"schedule": exc.message}) from exc


class Quota(TimeStampedModel):
    """How much of one device kind (and optionally one model) a tenant may hold at once.

    `max_count` limits whole devices; `max_memory_gib` is the limit for CXL memory (kind
    cxl_memory) and `max_storage_tb` for NVMe capacity (kind nvme): which limits a kind
    takes is its declaration's `quota` (`fabric.kinds`). A blank `model` covers
    every model of the kind. A blank limit means no limit. Checked by
    `composer.services.compositions` before placement, against what the tenant's active
    compositions hold plus what is asked.
    """

    tenant = models.ForeignKey("composer.Tenant", on_delete=models.CASCADE, related_name="quotas")
    kind = models.CharField(max_length=16, choices=DeviceKind.choices)
    model = models.CharField(max_length=100, blank=True, help_text="Blank: every model.")
    max_count = models.PositiveIntegerField(null=True, blank=True)
    max_memory_gib = models.PositiveIntegerField(null=True, blank=True)
    max_storage_tb = models.FloatField(null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        ordering = ["tenant__name", "kind", "model"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "kind", "model"], name="composer_quota_unique_kind_model"
            ),
            models.CheckConstraint(
                condition=Q(max_storage_tb__isnull=True) | Q(max_storage_tb__gte=0),
                name="composer_quota_storage_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant}: {self.label}"

    @property
    def label(self) -> str:
        """How messages name the quota: "GPU (H100 PCIe 80GB)", "CXL memory"."""
        kind = DeviceKind(self.kind).label
        return f"{kind} ({self.model})" if self.model else kind

    def clean(self) -> None:
        super().clean()
        check_text_fields(names={"model": self.model})
        errors: dict[str, Any] = {}
        declared = find(self.kind)
        limits = declared.quota if declared else ()
        if self.max_memory_gib is not None and "gib" not in limits:
            errors["max_memory_gib"] = "Only a CXL memory quota has a GiB limit."
        if self.max_storage_tb is not None and "tb" not in limits:
            errors["max_storage_tb"] = "Only an NVMe quota has a TB limit."
        if errors:
            raise ValidationError(errors)
