"""Persistent state of the simulated fabric manager (the app `simulated_fabric`).

These tables are the simulated manager's own memory, not the console's inventory: the
console learns what is here only through the driver's discovery, as it would from a real
manager. Every web process and worker shares this state through the database, and it
survives restarts. An app of its own, installed with the simulator (COMPOSER_SIMULATOR),
so that the product's apps hold none of the simulator's tables; the tables keep the names
they were created under.
"""

from __future__ import annotations

from django.db import models

from fabric.models.base import TimeStampedModel


class SimulatedFabric(TimeStampedModel):
    """One simulated fabric manager's world.

    `latency_ms` maps an operation (discover, bind, unbind, health, bindings) to the time it
    takes; `operation_faults` maps an operation to an injected failure
    ({"mode": "transient" | "permanent" | "timeout", "remaining": n}) that the next n calls
    raise, for tests and demos of retries and rollbacks.
    """

    name = models.CharField(max_length=100, unique=True)
    latency_ms = models.JSONField(default=dict, blank=True)
    operation_faults = models.JSONField(default=dict, blank=True)

    class Meta:
        app_label = "simulated_fabric"  # never fabric's, even when this app is left out
        db_table = "fabric_simulatedfabric"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SimulatedElement(models.Model):
    """One element of a simulated fabric (rack, power feed, switch, port, link, host, ...).

    `data` holds what discovery reports about it; `fault` is the injected fault on the
    element itself ("", "failed" or "degraded"). The simulated manager reports each
    element's own fault, as a real manager does; what a fault takes with it the console
    derives (fabric.health.propagation). Its bind rule follows the faults through the
    physical dependencies (a failed power feed's gear, a failed enclosure's devices are
    refused: fabric.simulator.propagation).
    """

    class Kind(models.TextChoices):
        RACK = "rack"
        POWER_FEED = "power_feed"
        SWITCH = "switch"
        HOST = "host"
        ENCLOSURE = "enclosure"
        DEVICE = "device"
        PORT = "port"
        LINK = "link"

    class Fault(models.TextChoices):
        NONE = "", "None"
        FAILED = "failed", "Failed"
        DEGRADED = "degraded", "Degraded"

    fabric = models.ForeignKey(SimulatedFabric, on_delete=models.CASCADE, related_name="elements")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    external_id = models.CharField(max_length=200)
    data = models.JSONField(default=dict)
    fault = models.CharField(max_length=10, choices=Fault.choices, default=Fault.NONE, blank=True)
    is_present = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "simulated_fabric"
        db_table = "fabric_simulatedelement"
        ordering = ["fabric_id", "kind", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["fabric", "external_id"], name="fabric_simelement_unique"
            )
        ]
        indexes = [models.Index(fields=["fabric", "kind"], name="fabric_simelement_kind")]

    def __str__(self) -> str:
        return f"{self.kind} {self.external_id}"


class SimulatedBinding(models.Model):
    """A device (or a GiB slice of a CXL memory device) bound to a host by the simulated manager."""

    fabric = models.ForeignKey(SimulatedFabric, on_delete=models.CASCADE, related_name="bindings")
    binding_id = models.CharField(max_length=64)
    device_id = models.CharField(max_length=200)
    host_id = models.CharField(max_length=200)
    size_gib = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "simulated_fabric"
        db_table = "fabric_simulatedbinding"
        ordering = ["fabric_id", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["fabric", "binding_id"], name="fabric_simbinding_unique"
            ),
            # A whole device binds once; slices of memory are checked against capacity.
            models.UniqueConstraint(
                fields=["fabric", "device_id"],
                condition=models.Q(size_gib__isnull=True),
                name="fabric_simbinding_whole_device_once",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.device_id} -> {self.host_id}"
