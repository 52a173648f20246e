"""Compositions (logical servers), the devices they hold, and their audit trail."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from composer.choices import LIVE_COMPOSITION_STATES, AllocationState, CompositionState
from composer.querysets import TenantScopedQuerySet
from fabric.models.base import TimeStampedModel


class _ThroughCompositionQuerySet(TenantScopedQuerySet):
    """Rows that belong to a tenant through their composition."""

    tenant_field = "composition__tenant"


class Composition(TimeStampedModel):
    """A logical server: one host plus the devices bound to it for a tenant.

    Lifecycle (`composer.states.COMPOSITION_ALLOWED`, changed only by
    `composition_transition`, each change audited as a StateChange):

        REQUESTED -> PLACING -> BINDING -> READY -> DECOMPOSING -> RELEASED
        REQUESTED | PLACING -> REJECTED          (no placement; reason and funnel kept)
        REQUESTED | PLACING | BINDING -> FAILED  (after the rollback of what was bound)
        READY -> DEGRADED -> HEALING -> READY    (a device failed; self-heal replaced it)
        READY -> RESIZING -> READY               (devices added or removed, or the
                                                  additions rolled back:
                                                  composer.services.resize)
        DEGRADED -> READY | DECOMPOSING          (the fault cleared; or the tenant let go)
        PLACING -> HELD -> PLACING | RELEASED    (a hold: claimed, not bound, until
                                                  `hold_expires_at`; applied, or let go
                                                  or lapsed: composer.services.holds)

    `spec` is the normalised request (`composer.specs`); `placement` the plan (host,
    devices, slices, score, explanation, funnel) or, when rejected, the rejection. `name`
    is unique among the tenant's live compositions (`LIVE_COMPOSITION_STATES`).
    """

    tenant = models.ForeignKey(
        "composer.Tenant", on_delete=models.PROTECT, related_name="compositions"
    )
    name = models.CharField(max_length=100)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    template = models.ForeignKey(
        "composer.Template",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="compositions",
    )
    spec = models.JSONField(default=dict)
    state = models.CharField(
        max_length=12, choices=CompositionState.choices, default=CompositionState.REQUESTED
    )
    host = models.ForeignKey(
        "fabric.Host",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="compositions",
        help_text="The host the composition is built on; empty until placed.",
    )
    placement = models.JSONField(default=dict, blank=True)
    score = models.FloatField(null=True, blank=True)
    failure_reason = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=200, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    hold_expires_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a held composition lapses (its claims are given back) unless applied.",
    )
    released_at = models.DateTimeField(null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="composer_composition_idempotency_key",
            ),
            # One live composition of a tenant per name; a released (or decomposing,
            # rejected, failed) one leaves its name free for the next request.
            models.UniqueConstraint(
                fields=["tenant", "name"],
                condition=Q(state__in=sorted(LIVE_COMPOSITION_STATES)),
                name="composer_composition_live_name",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "state"], name="composer_comp_tenant_state"),
            models.Index(fields=["state"], name="composer_comp_state"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"


class Allocation(models.Model):
    """One device, one GiB slice (`gib`) of a CXL memory device, or one share (`share`,
    thousandths) of a GPU, held by one composition.

    Lifecycle: RESERVED (claimed in the database) -> BOUND (the driver bound it;
    `binding_id` recorded before the job moves on) -> RELEASED (`released_at` set).
    Rule 1 lives here: a partial unique index lets a whole device have one unreleased
    allocation at most; slices and shares are checked against the device's capacity under its
    row lock, and the device's own constraints hold shares to one host and to the kind's
    count (`composer.services.allocations`, `fabric.models.Device`).
    """

    composition = models.ForeignKey(
        Composition, on_delete=models.PROTECT, related_name="allocations"
    )
    device = models.ForeignKey(
        "fabric.Device", on_delete=models.PROTECT, related_name="allocations"
    )
    gib = models.PositiveIntegerField(
        null=True, blank=True, help_text="Size of a CXL memory slice; empty for a whole device."
    )
    share = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="A share of a GPU, in thousandths of the device; empty otherwise.",
    )
    state = models.CharField(
        max_length=10, choices=AllocationState.choices, default=AllocationState.RESERVED
    )
    binding_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    bound_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)

    objects = _ThroughCompositionQuerySet.as_manager()

    class Meta:
        ordering = ["composition_id", "id"]
        constraints = [
            # Rule 1, in the database: a whole device is held by one composition at a time.
            models.UniqueConstraint(
                fields=["device"],
                condition=Q(gib__isnull=True, share__isnull=True, released_at__isnull=True),
                name="composer_allocation_whole_device_once",
            ),
            # The driver holds one slice of a memory device per host: one per composition.
            models.UniqueConstraint(
                fields=["composition", "device"],
                condition=Q(released_at__isnull=True),
                name="composer_allocation_device_once_per_composition",
            ),
            models.CheckConstraint(
                condition=Q(gib__isnull=True) | Q(gib__gt=0),
                name="composer_allocation_gib_positive",
            ),
            # A share is part of one device, never a whole one, never also a slice.
            models.CheckConstraint(
                condition=Q(share__isnull=True) | Q(share__gt=0, gib__isnull=True),
                name="composer_allocation_share_positive_not_slice",
            ),
            # The unique index relies on released_at: keep it in step with the state.
            models.CheckConstraint(
                condition=(Q(state=AllocationState.RELEASED) & Q(released_at__isnull=False))
                | (~Q(state=AllocationState.RELEASED) & Q(released_at__isnull=True)),
                name="composer_allocation_released_at_matches_state",
            ),
        ]
        indexes = [
            models.Index(fields=["device", "released_at"], name="composer_alloc_device_active"),
        ]

    def __str__(self) -> str:
        size = f" {self.gib} GiB" if self.gib else (f" share {self.share}" if self.share else "")
        return f"allocation {self.pk}: device {self.device_id}{size} ({self.state})"

    @property
    def is_active(self) -> bool:
        return self.released_at is None


class StateChange(models.Model):
    """One change of a composition's state: who, what (before -> after), why, when, from where.

    Append-only; written by `composer.states.composition_transition` in the same
    transaction as the change itself.
    """

    composition = models.ForeignKey(
        Composition, on_delete=models.CASCADE, related_name="state_changes"
    )
    from_state = models.CharField(max_length=12, blank=True)
    to_state = models.CharField(max_length=12, choices=CompositionState.choices)
    reason = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=100, blank=True, help_text='e.g. "compose job 12".')
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    objects = _ThroughCompositionQuerySet.as_manager()

    class Meta:
        ordering = ["composition_id", "at", "id"]

    def __str__(self) -> str:
        return f"{self.from_state or '-'} -> {self.to_state}"
