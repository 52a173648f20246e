"""Health samples (what each poll read), alerts (what a person must see), and rule state.

See fabric/health/poll.py for how a poll writes them, fabric/health/conditions.py for the
thresholds and fabric/health/rules.py for the damping that decide when an alert opens and
closes.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from fabric.choices import AlertSeverity, AlertSource, AlertState, Health, PowerState, SampleTarget
from fabric.health.wording import tenant_alert_message


class HealthSample(models.Model):
    """One element's health and sensor readings at one poll.

    Written in bulk by `fabric.health.poll.health_poll`, never changed, deleted by
    `fabric.services.alerts.health_samples_prune` after `COMPOSER_HEALTH_RETENTION_HOURS`.
    Not every poll stores every element: a poll stores every sampled element at most once
    per `COMPOSER_HEALTH_SAMPLE_INTERVAL_S`, and in between only the elements that are
    unwell or whose health changed (see poll.py), so a healthy fabric polled every few
    seconds does not write millions of identical rows a day. `target_id` is the element's
    console id (no foreign key: six kinds of target, and samples outlive nothing).
    """

    manager = models.ForeignKey(
        "fabric.FabricManager", on_delete=models.CASCADE, related_name="health_samples"
    )
    target_type = models.CharField(max_length=16, choices=SampleTarget.choices)
    target_id = models.BigIntegerField()
    taken_at = models.DateTimeField()
    health = models.CharField(max_length=16, choices=Health.choices)
    state = models.CharField(max_length=30, blank=True, help_text="The manager's own word.")
    detail = models.CharField(max_length=300, blank=True, help_text="Why it is not ok.")
    temperature_c = models.FloatField(null=True, blank=True)
    correctable_errors = models.FloatField(null=True, blank=True, help_text="In the period.")
    uncorrectable_errors = models.FloatField(null=True, blank=True, help_text="In the period.")
    poison_count = models.FloatField(null=True, blank=True)
    link_errors = models.FloatField(null=True, blank=True, help_text="In the period.")
    link_retrains = models.FloatField(null=True, blank=True, help_text="In the period.")
    link_width = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Lanes.")
    link_speed_gts = models.FloatField(null=True, blank=True)
    power_state = models.CharField(max_length=3, choices=PowerState.choices, blank=True)
    utilisation_pct = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(default=dict, blank=True, help_text="Every other metric.")

    class Meta:
        ordering = ["-taken_at", "-id"]
        indexes = [
            # "samples of one element, newest first" (the device page and API)
            models.Index(
                fields=["target_type", "target_id", "-taken_at"], name="fabric_sample_target"
            ),
            # pruning by age
            models.Index(fields=["taken_at"], name="fabric_sample_taken"),
        ]

    def __str__(self) -> str:
        return f"{self.target_type} {self.target_id} {self.health} at {self.taken_at:%H:%M:%S}"


class Alert(models.Model):
    """A health condition a person must see: its source, severity, and what it puts at risk.

    Lifecycle: OPEN -> CLOSED. The poller opens one when a rule's condition has held long
    enough, folds repeats into it (`occurrences`, `last_seen_at`), raises or lowers its
    severity, and closes it after the element has been clean long enough; the same
    condition later is a new alert. At most one open alert per (source, rule): a
    database constraint, so two polls running at once cannot open it twice.
    `blast_radius` is what the source's failure takes down, computed once when the alert
    opens (devices, hosts, compositions and tenants then; see poll.py for the shape).
    Acknowledging records who has seen it; it does not close it.
    """

    manager = models.ForeignKey(
        "fabric.FabricManager", on_delete=models.PROTECT, related_name="alerts"
    )
    source_type = models.CharField(max_length=16, choices=AlertSource.choices)
    source_id = models.BigIntegerField()
    source_name = models.CharField(max_length=200)
    rule = models.CharField(max_length=40, help_text="The rule key (fabric.health.rules).")
    severity = models.CharField(max_length=8, choices=AlertSeverity.choices)
    message = models.CharField(max_length=500)
    state = models.CharField(max_length=8, choices=AlertState.choices, default=AlertState.OPEN)
    opened_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    occurrences = models.PositiveIntegerField(
        default=1, help_text="Polls that saw the condition while the alert was open."
    )
    is_flapping = models.BooleanField(default=False)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="acknowledged_alerts",
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    blast_radius = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["source_type", "source_id", "rule"],
                condition=Q(state="open"),
                name="fabric_alert_one_open_per_source_rule",
            ),
            models.CheckConstraint(
                condition=Q(state="open", closed_at__isnull=True)
                | Q(state="closed", closed_at__isnull=False),
                name="fabric_alert_closed_at_iff_closed",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "-opened_at"], name="fabric_alert_state"),
            models.Index(
                fields=["source_type", "source_id", "-opened_at"], name="fabric_alert_source"
            ),
            models.Index(fields=["manager", "state"], name="fabric_alert_manager"),
        ]

    def __str__(self) -> str:
        return f"{self.severity} {self.rule} on {self.source_type} {self.source_name}"

    @property
    def tenant_message(self) -> str:
        """The alert in a tenant's words: the kind of element and what is wrong, without
        its name or the manager's own text (`fabric.health.wording`)."""
        return tenant_alert_message(self.source_type, self.rule)

    @property
    def is_open(self) -> bool:
        return self.state == AlertState.OPEN

    @property
    def is_acknowledged(self) -> bool:
        return self.acknowledged_at is not None


class HealthCondition(models.Model):
    """What the rules remember about one element and rule between polls (fabric.health.rules
    `RuleState`): streaks, flaps, and the open alert.

    Kept only while there is something to remember (a condition holds, an alert is open, a
    flap is recent); the poller deletes the row otherwise, so a healthy fabric has none.
    Derived state: the admin shows it read-only.
    """

    manager = models.ForeignKey(
        "fabric.FabricManager", on_delete=models.CASCADE, related_name="health_conditions"
    )
    target_type = models.CharField(max_length=16, choices=AlertSource.choices)
    target_id = models.BigIntegerField()
    rule = models.CharField(max_length=40)
    bad_streak = models.PositiveIntegerField(default=0)
    clean_streak = models.PositiveIntegerField(default=0)
    severity = models.CharField(max_length=8, choices=AlertSeverity.choices, blank=True)
    is_flapping = models.BooleanField(default=False)
    flaps = models.JSONField(default=list, blank=True, help_text="Epoch seconds of each flap.")
    last_bad_at = models.DateTimeField(null=True, blank=True)
    alert = models.ForeignKey(
        Alert, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["target_type", "target_id", "rule"], name="fabric_condition_unique"
            )
        ]
        indexes = [models.Index(fields=["manager"], name="fabric_condition_manager")]

    def __str__(self) -> str:
        return f"{self.rule} on {self.target_type} {self.target_id}"
