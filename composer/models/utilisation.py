"""Utilisation history: each pool's figures and each tenant's live compositions over time.

A beat task (`composer.services.utilisation.utilisation_tick`) takes a minute sample every
minute and folds the minutes into hourly and daily rollups; minutes are kept a few days,
rollups a year (settings `COMPOSER_UTILISATION_MINUTES_DAYS`, `..._ROLLUPS_DAYS`). A row is
one bucket of one resolution: the minute sample itself, or the mean of the minutes (hours)
or of the hours (days) it covers, so a rollup rerun for the same bucket writes the same row.
"""

from __future__ import annotations

from django.db import models

from composer.querysets import TenantScopedQuerySet


class Resolution(models.TextChoices):
    MINUTE = "minute", "Minute"  # one sample, taken in that minute
    HOUR = "hour", "Hour"  # the mean of that hour's minute samples
    DAY = "day", "Day"  # the mean of that (UTC) day's hours, weighted by their samples


class CapacityFigures(models.Model):
    """The figures of one bucket, in the unit of what they describe (devices, or GiB of a
    partitionable kind): a minute's sample, or the means of the samples a rollup covers.
    `allocated_peak`: the highest allocated figure of those samples. `samples`: how many
    minute samples the bucket holds (1 for a minute)."""

    resolution = models.CharField(max_length=8, choices=Resolution.choices)
    bucket_start = models.DateTimeField()
    kind = models.CharField(max_length=16)
    unit = models.CharField(max_length=8)
    capacity = models.FloatField()
    allocated = models.FloatField()
    allocated_peak = models.FloatField()
    free = models.FloatField()
    unavailable = models.FloatField()
    stranded = models.FloatField()
    samples = models.PositiveIntegerField(default=1)

    class Meta:
        abstract = True


class PoolSample(CapacityFigures):
    """One pool's figures in one bucket, in the pool's unit (devices, or GiB for a
    partitionable pool), as `fabric.selectors.pool_capacities` and
    `composer.monitoring.stranded.stranded_by_pool` count them at sample time. `kind` and
    `unit` are the pool's at that time."""

    pool = models.ForeignKey(
        "fabric.Pool", on_delete=models.CASCADE, related_name="utilisation_samples"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "resolution", "bucket_start"], name="composer_pool_sample_bucket"
            )
        ]
        indexes = [
            models.Index(fields=["resolution", "bucket_start"], name="composer_pool_sample_time"),
        ]

    def __str__(self) -> str:
        return f"{self.pool_id} {self.resolution} {self.bucket_start:%Y-%m-%d %H:%M}"


class KindSample(CapacityFigures):
    """The data centre's figures for one device kind (and unit) in one bucket: the sum of
    its pools' minute samples, written with them, so that reading the data centre's history
    reads one row a bucket rather than summing every pool's. A rollup's `allocated_peak` is
    the data centre's own peak (the highest of its minute totals), not a sum of the pools'."""

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "unit", "resolution", "bucket_start"],
                name="composer_kind_sample_bucket",
            )
        ]
        indexes = [
            models.Index(fields=["resolution", "bucket_start"], name="composer_kind_sample_time"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.resolution} {self.bucket_start:%Y-%m-%d %H:%M}"


class TenantSample(models.Model):
    """How many live compositions one tenant had in one bucket (the mean over the bucket's
    minute samples for a rollup, so a composition that lived half an hour counts 0.5 in its
    hour). Every tenant gets a row per minute, zero included, so a gap means "not sampled"
    and never "none"."""

    tenant = models.ForeignKey(
        "composer.Tenant", on_delete=models.CASCADE, related_name="utilisation_samples"
    )
    resolution = models.CharField(max_length=8, choices=Resolution.choices)
    bucket_start = models.DateTimeField()
    compositions = models.FloatField()
    samples = models.PositiveIntegerField(default=1)

    # Tenant-owned: every read starts from `for_user` (operators all, members their own).
    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resolution", "bucket_start"],
                name="composer_tenant_sample_bucket",
            )
        ]
        indexes = [
            models.Index(fields=["resolution", "bucket_start"], name="composer_tenant_sample_time"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.resolution} {self.bucket_start:%Y-%m-%d %H:%M}"
