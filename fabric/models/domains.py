"""Failure domains: what fails together (a rack, a power feed, an enclosure, a switch, ...).

Derived data, not history: `fabric.services.domains.domains_refresh` rewrites them from the
topology at the end of every inventory sync (new ones created, changed ones updated, ones
whose rack, feed, switch or link has gone deleted). See fabric/topology/domains.py for what
each kind takes down and docs/topology.md for the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

from fabric.choices import FailureDomainKind
from fabric.models.base import TimeStampedModel
from fabric.topology.radius import RADIUS_VERSION, radius_headline

if TYPE_CHECKING:
    from fabric.models.inventory import Device


class FailureDomain(TimeStampedModel):
    """One failure domain of one fabric manager, identified by its topology key.

    `key` is the graph id of what fails ("switch:12", "power_feed:3", "memory_box:7",
    "fabric_manager:1"), stable across syncs while that thing exists, so the row (and its
    id in URLs) is kept. `device_count` / `host_count` are what its failure loses, and
    `devices_degraded_count` / `hosts_degraded_count` what it degrades: its blast radius
    (fabric.topology.radius, the definition the alerts, the topology page and the what-if
    use too), stored so that the list can sort by it; `radius_version` is the version of
    that definition they follow (an older one is recounted, and shown as such until then).
    `devices` are its members: what fails with it, or, for a switch or link, what is cabled
    through it.
    """

    manager = models.ForeignKey(
        "fabric.FabricManager", on_delete=models.CASCADE, related_name="failure_domains"
    )
    key = models.CharField(max_length=60)
    kind = models.CharField(max_length=16, choices=FailureDomainKind.choices)
    name = models.CharField(max_length=200)
    device_count = models.PositiveIntegerField(default=0, help_text="Devices its failure loses.")
    host_count = models.PositiveIntegerField(default=0, help_text="Hosts its failure loses.")
    devices_degraded_count = models.PositiveIntegerField(
        default=0, help_text="Devices its failure degrades (still reached, over fewer paths)."
    )
    hosts_degraded_count = models.PositiveIntegerField(
        default=0, help_text="Hosts its failure degrades (still working, with fewer paths)."
    )
    radius_version = models.PositiveSmallIntegerField(
        default=0,
        help_text="The blast-radius definition its counts follow "
        "(fabric.topology.radius.RADIUS_VERSION); 0: counted before versions were kept.",
    )
    devices: models.ManyToManyField[Device, DeviceDomain] = models.ManyToManyField(
        "fabric.Device", through="DeviceDomain", related_name="failure_domains", blank=True
    )

    class Meta:
        ordering = ["kind", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["manager", "key"], name="fabric_failuredomain_unique_key"
            )
        ]
        indexes = [models.Index(fields=["kind", "name"], name="fabric_failuredomain_kind")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.name}"

    @property
    def counts_outdated(self) -> bool:
        """Whether its figures follow another definition of the blast radius than this
        release's (stored before an upgrade that changed it): recounted within a minute."""
        return self.radius_version != RADIUS_VERSION

    @property
    def headline(self) -> str:
        """What its failure takes, in the words every page uses."""
        return radius_headline(
            devices_lost=self.device_count,
            hosts_lost=self.host_count,
            devices_degraded=self.devices_degraded_count,
            hosts_degraded=self.hosts_degraded_count,
        )


class DeviceDomain(models.Model):
    """A device's membership of a failure domain (rewritten with the domains)."""

    device = models.ForeignKey(
        "fabric.Device", on_delete=models.CASCADE, related_name="domain_memberships"
    )
    domain = models.ForeignKey(FailureDomain, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["domain", "device"], name="fabric_devicedomain_unique")
        ]
        indexes = [models.Index(fields=["device"], name="fabric_devicedomain_device")]

    def __str__(self) -> str:
        return f"{self.device_id} in {self.domain_id}"
