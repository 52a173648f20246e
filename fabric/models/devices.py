"""Fabric managers, the switches they run, and the ports of switches, hosts and enclosures."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from fabric.choices import ComponentState, PortRole, SwitchProtocol, SwitchTier
from fabric.models.base import DiscoveredModel, RackMounted, TimeStampedModel


def default_health_poll_interval_s() -> int:
    """A new manager's health poll interval: COMPOSER_HEALTH_POLL_INTERVAL_S (30 s)."""
    return int(getattr(settings, "COMPOSER_HEALTH_POLL_INTERVAL_S", 30))


class FabricManager(TimeStampedModel):
    """The software that runs one fabric (its switches and bindings), reached through a driver.

    `driver` names an entry of `fabric.drivers.registry.DRIVERS`; `settings` holds the
    driver's options (for the simulated driver: which simulated fabric, latencies; for any
    driver that speaks TLS, `verify_tls` and `ca_bundle`). The endpoint and settings are
    fabric internals: tenants never see them. The credentials the driver signs in with are
    only in `credentials_ciphertext`, encrypted (`fabric.credentials`); nothing shows them.

    Operators add, change, disable and delete managers from the console
    (`fabric.services.managers`); a disabled one is neither synchronised nor polled.
    """

    name = models.CharField(
        max_length=100,
        unique=True,
        error_messages={"unique": "Another fabric manager already has this name."},
    )
    driver = models.CharField(max_length=40)
    endpoint = models.CharField(max_length=300, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    # A Fernet token of {"username", "password"} or {"token"}; "" for none. Not editable:
    # no ModelForm (the admin's included) ever renders it.
    credentials_ciphertext = models.TextField(blank=True, default="", editable=False)
    is_enabled = models.BooleanField(default=True)
    poll_interval_s = models.PositiveIntegerField(default=30)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    last_sync_error = models.TextField(blank=True)
    # Health polling (fabric.health.poll): how often, when last, and why the last one failed.
    health_poll_interval_s = models.PositiveIntegerField(
        default=default_health_poll_interval_s,
        validators=[MinValueValidator(1)],
        help_text="Seconds between health polls of this manager.",
    )
    last_health_poll_at = models.DateTimeField(null=True, blank=True)
    last_health_poll_error = models.TextField(blank=True)
    last_health_sample_at = models.DateTimeField(
        null=True, blank=True, help_text="When a poll last stored a sample of every element."
    )
    # A poll asked for now (after a fault injection, say): the next health tick polls the
    # manager whatever its interval, and the poll clears it. Recorded rather than only sent
    # to the task queue, so that a request made while Redis is away is not lost.
    poll_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="When a poll was asked for that has not run yet."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def has_credentials(self) -> bool:
        """Whether credentials are stored (what they are is never shown)."""
        return bool(self.credentials_ciphertext)

    def clean(self) -> None:
        from fabric.drivers.registry import DRIVERS

        if self.driver not in DRIVERS:
            raise ValidationError(
                {
                    "driver": f"Unknown driver {self.driver!r}; choose one of "
                    f"{', '.join(sorted(DRIVERS))}."
                }
            )


class Switch(RackMounted, DiscoveredModel):
    """A PCIe or CXL switch; a failure domain of its own."""

    name = models.CharField(max_length=100)
    vendor = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=100, blank=True)
    serial = models.CharField(max_length=100, blank=True)
    firmware = models.CharField(max_length=50, blank=True)
    protocol = models.CharField(max_length=8, choices=SwitchProtocol.choices)
    tier = models.CharField(max_length=8, choices=SwitchTier.choices, default=SwitchTier.LEAF)
    rack = models.ForeignKey(
        "fabric.Rack", null=True, blank=True, on_delete=models.SET_NULL, related_name="switches"
    )
    power_feed = models.ForeignKey(
        "fabric.PowerFeed",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="switches",
    )
    state = models.CharField(
        max_length=16, choices=ComponentState.choices, default=ComponentState.ACTIVE
    )

    class Meta(DiscoveredModel.Meta):
        ordering = ["name"]
        verbose_name_plural = "switches"

    def __str__(self) -> str:
        return self.name


class Port(DiscoveredModel):
    """One port: on a switch, or a host's or enclosure's own uplink port into the fabric.

    Exactly one owner is set; a database constraint keeps it so.
    """

    name = models.CharField(max_length=60)
    switch = models.ForeignKey(
        "fabric.Switch", null=True, blank=True, on_delete=models.CASCADE, related_name="ports"
    )
    host = models.ForeignKey(
        "fabric.Host", null=True, blank=True, on_delete=models.CASCADE, related_name="ports"
    )
    enclosure = models.ForeignKey(
        "fabric.Enclosure", null=True, blank=True, on_delete=models.CASCADE, related_name="ports"
    )
    number = models.PositiveIntegerField(default=0)
    role = models.CharField(max_length=12, choices=PortRole.choices)
    lanes = models.PositiveSmallIntegerField(default=16)
    speed_gts = models.FloatField(default=32.0, help_text="Per-lane signalling rate in GT/s.")
    is_present = models.BooleanField(default=True)

    class Meta(DiscoveredModel.Meta):
        ordering = ["switch_id", "host_id", "enclosure_id", "number"]
        constraints = [
            *DiscoveredModel.Meta.constraints,
            models.CheckConstraint(
                condition=(
                    models.Q(switch__isnull=False, host__isnull=True, enclosure__isnull=True)
                    | models.Q(switch__isnull=True, host__isnull=False, enclosure__isnull=True)
                    | models.Q(switch__isnull=True, host__isnull=True, enclosure__isnull=False)
                ),
                name="fabric_port_exactly_one_owner",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.owner}:{self.name}"

    @property
    def owner(self) -> models.Model | None:
        """The switch, host or enclosure this port belongs to."""
        return self.switch or self.host or self.enclosure
