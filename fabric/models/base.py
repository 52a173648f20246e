"""Abstract bases shared by the physical models."""

from __future__ import annotations

from django.db import models

from fabric.choices import Health


class TimeStampedModel(models.Model):
    """Adds created and updated times; every concrete model in the project carries them."""

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class DiscoveredModel(TimeStampedModel):
    """Something a fabric manager reports. Its identity is (manager, external_id).

    Rows are written only by inventory synchronisation; a row the manager stops reporting is
    marked absent, never deleted, so its history stays readable.
    """

    manager = models.ForeignKey(
        "fabric.FabricManager", on_delete=models.PROTECT, related_name="%(class)ss"
    )
    external_id = models.CharField(max_length=200, help_text="The manager's own identifier.")
    health = models.CharField(max_length=16, choices=Health.choices, default=Health.UNKNOWN)
    attributes = models.JSONField(default=dict, blank=True)
    first_seen_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        constraints = [
            models.UniqueConstraint(
                fields=["manager", "external_id"], name="%(app_label)s_%(class)s_unique_external"
            )
        ]


class RackMounted(models.Model):
    """Where a switch, host or enclosure sits in its rack: the lowest unit it occupies and how
    many units it takes, as the fabric manager reports them (Redfish: `Location.Placement
    .RackOffset` and `HeightMm`). The rack elevation draws from these; a manager that says
    nothing leaves `rack_unit` empty and the page lists the box as not placed in a unit."""

    rack_unit = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="The lowest rack unit it occupies, counted from 1 at the bottom; blank "
        "where the manager does not say.",
    )
    height_u = models.PositiveSmallIntegerField(
        default=1, help_text="How many rack units (U) it takes."
    )

    class Meta:
        abstract = True
