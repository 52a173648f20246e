"""Drift repair: bindings still to undo, and the reconciler's runs with what each found."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class UnbindOutcome(models.TextChoices):
    """Where a binding still to undo stands."""

    PENDING = "pending", "Being cleaned up"  # still on the fabric: the reconciler retries
    UNDONE = "undone", "Unbound"  # the manager unbound it (or no longer had it)


class UnbindPending(models.Model):
    """A binding on the fabric that nothing claims any more and that could not be undone yet.

    Written when a rollback, a heal or a heal's rollback releases an allocation whose unbind
    failed (after its retries): the allocation is released, so the FAILED (or healed)
    composition holds nothing, but the device is still bound on the fabric, so this row holds
    it instead: a whole device stays BOUND to `host`, a memory slice's `gib` stay counted in
    its device's `allocated_gib` (`composer.services.allocations.reconcile.slices_held_gib`).
    No claim can take it meanwhile. The reconciler (`composer.services.reconcile`) retries the
    unbind until the manager confirms, then sets `undone_at` and gives the device back.

    Lifecycle: PENDING (`undone_at` empty) -> UNDONE.
    """

    device = models.ForeignKey("fabric.Device", on_delete=models.PROTECT, related_name="+")
    host = models.ForeignKey("fabric.Host", on_delete=models.PROTECT, related_name="+")
    binding_id = models.CharField(max_length=200)
    gib = models.PositiveIntegerField(null=True, blank=True, help_text="A memory slice's size.")
    composition = models.ForeignKey(
        "composer.Composition",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="unbinds_pending",
    )
    allocation = models.ForeignKey(
        "composer.Allocation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    source = models.CharField(max_length=100, blank=True, help_text='e.g. "compose job 12".')
    since = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["since", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["host", "binding_id"],
                condition=Q(undone_at__isnull=True),
                name="composer_unbind_pending_once",
            ),
        ]
        indexes = [models.Index(fields=["undone_at", "device"], name="composer_unbind_open")]

    def __str__(self) -> str:
        return f"unbind {self.binding_id} of device {self.device_id} ({self.state_label})"

    @property
    def state_label(self) -> str:
        done = self.undone_at is not None
        return str((UnbindOutcome.UNDONE if done else UnbindOutcome.PENDING).label)


class ReconcileTrigger(models.TextChoices):
    SCHEDULE = "schedule", "Schedule"  # beat, every COMPOSER_RECONCILE_INTERVAL_S
    OPERATOR = "operator", "Operator"  # "Reconcile now" on the page or POST in the API


class ReconcileStatus(models.TextChoices):
    QUEUED = "queued", "Queued"  # asked for; a worker has not started it yet
    RUNNING = "running", "Running"
    DONE = "done", "Done"  # every step ran (a finding may still be pending)
    SKIPPED = "skipped", "Skipped"  # another run was in progress
    FAILED = "failed", "Failed"  # a step raised; `error` says which


class ReconcileRun(models.Model):
    """One pass of the reconciler over every fabric manager (or consecutive clean ones).

    Lifecycle: QUEUED (asked for by an operator) -> RUNNING -> DONE | FAILED | SKIPPED.
    A scheduled pass that repairs nothing and finds what the latest row found (nothing, or
    the same bindings still pending, the same manager unreachable) does not add a row when
    that row is a scheduled pass too: its `finished_at` and `repeats` move on instead, so a
    quiet fabric (or one stuck binding) costs one row, not 2,880 a day, and the page still
    says when it was last checked.
    """

    trigger = models.CharField(max_length=10, choices=ReconcileTrigger.choices)
    status = models.CharField(
        max_length=10, choices=ReconcileStatus.choices, default=ReconcileStatus.QUEUED
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    repeats = models.PositiveIntegerField(
        default=1, help_text="Consecutive scheduled passes this row stands for (same findings)."
    )
    managers = models.PositiveIntegerField(default=0, help_text="Fabric managers compared.")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"reconcile run {self.pk} ({self.status})"


class FindingKind(models.TextChoices):
    ORPHAN = "orphan", "Binding nothing claims"  # on the fabric, no allocation claims it
    MISSING = "missing", "Binding missing"  # an active allocation's binding is gone
    UNBIND_PENDING = "unbind_pending", "Unbind being retried"  # an UnbindPending row
    UNFINISHED_COMPOSE = "unfinished_compose", "Compose left unfinished"
    UNFINISHED_DECOMPOSE = "unfinished_decompose", "Decompose left unfinished"
    UNFINISHED_RESIZE = "unfinished_resize", "Resize left unfinished"
    HELD_LAPSED = "held_lapsed", "Held past expiry"  # a hold still claiming after its time
    HEALTH = "health", "Out of line with health"  # degraded, recovered, heal requeued
    ALLOCATED_GIB = "allocated_gib", "Allocated memory recounted"
    ALLOCATED_SHARES = "allocated_shares", "Allocated GPU shares recounted"
    MANAGER_UNREACHABLE = "manager_unreachable", "Fabric manager unreachable"


class FindingOutcome(models.TextChoices):
    REPAIRED = "repaired", "Repaired"  # the fabric and the database agree on it now
    PENDING = "pending", "Still pending"  # tried; retried at the next run
    REPORTED = "reported", "Reported"  # needs a person (or another mechanism) to act


class ReconcileFinding(models.Model):
    """One disagreement a reconcile run found, what it did about it, and how that ended."""

    run = models.ForeignKey(ReconcileRun, on_delete=models.CASCADE, related_name="findings")
    kind = models.CharField(max_length=24, choices=FindingKind.choices)
    outcome = models.CharField(max_length=10, choices=FindingOutcome.choices)
    manager = models.ForeignKey(
        "fabric.FabricManager", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    device = models.ForeignKey(
        "fabric.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    host = models.ForeignKey(
        "fabric.Host", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    composition = models.ForeignKey(
        "composer.Composition", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    binding_id = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=200, help_text="What the run did.")
    detail = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "id"]

    def __str__(self) -> str:
        return f"{self.kind}: {self.action} ({self.outcome})"
