"""The domain's series, read from the database at scrape time (a custom collector).

Pools, compositions, jobs waiting or running, alerts, device health and the fabric
managers' sync and poll are facts of the database, not of a process: counted here at each
scrape they are right whichever web process answers, survive restarts, and never need
adding up across processes (docs/monitoring.md). A few small aggregate queries per scrape,
whatever the inventory's size; the stranded capacity loads the topology once
(`fabric.topology.load`, eight queries).

Operators' surface: labels carry pool, tenant and manager names (what an operator sees on
the console), never a composition's or device's own name, a serial or a secret.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, Min, Q, Sum
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from composer.choices import CompositionState, JobKind, JobStatus
from composer.monitoring import dbprobe
from composer.monitoring.stranded import stranded_by_pool
from fabric.choices import AlertSeverity, AlertState, DeviceState, Health
from fabric.selectors import pool_capacities

logger = logging.getLogger(__name__)

__all__ = ["DomainCollector"]

POOL_LABELS = ["pool", "kind", "unit"]


class DomainCollector(Collector):
    """Yields the domain's gauges; each family on its own, so that one failing (a table
    locked, a bug) leaves the others and the scrape answers."""

    def collect(self) -> Iterator[Metric]:
        from composer.monitoring.runtime import runtime_families

        failed: list[str] = []
        families = [_pools, _compositions, _jobs, _health, _managers, _outbox]
        if dbprobe.database_probe() is not None:
            # The database is away: each family would wait for a connection in turn (the
            # pool's timeout, each); name them failed at once instead.
            failed = [family.__name__.strip("_") for family in families]
            families = []
        for family in (*families, runtime_families):
            try:
                # Whole, or not at all: a family that fails half-way yields nothing.
                yield from list(family())
            except Exception:
                logger.warning("metrics: %s not collected", family.__name__, exc_info=True)
                failed.append(family.__name__.strip("_"))
        if failed:
            yield _scrape_errors(failed)


def _scrape_errors(names: list[str]) -> Metric:
    """One family naming every family that failed (a name may appear once per scrape)."""
    family = GaugeMetricFamily(
        "composer_metrics_collect_error",
        "1 when a family of the domain's series could not be read at this scrape.",
        labels=["family"],
    )
    for name in names:
        family.add_metric([name], 1)
    return family


def _pools() -> Iterator[Metric]:
    names = ("capacity", "allocated", "free", "unavailable", "stranded")
    helps = {
        "capacity": "A pool's capacity: allocated + free + unavailable (devices, or GiB).",
        "allocated": "What compositions (or bindings still to undo) hold in a pool.",
        "free": "What a new composition could get from a pool now.",
        "unavailable": "What nothing holds but is failed, critical or in maintenance.",
        "stranded": "Free capacity no host can reach (a shared GPU's: its host cannot use) now.",
    }
    families = {
        n: GaugeMetricFamily(f"composer_pool_{n}", helps[n], labels=POOL_LABELS) for n in names
    }
    devices = GaugeMetricFamily(
        "composer_pool_devices", "Present devices a pool is made of.", labels=["pool", "kind"]
    )
    capacities = pool_capacities()
    stranded = stranded_by_pool()
    for cap in capacities:
        labels = [cap.pool.name, cap.pool.kind, "gib" if cap.unit == "GiB" else "devices"]
        for name in names[:-1]:
            families[name].add_metric(labels, getattr(cap, name))
        families["stranded"].add_metric(labels, stranded.get(cap.pool.pk, 0))
        devices.add_metric([cap.pool.name, cap.pool.kind], cap.devices)
    yield from families.values()
    yield devices


def _compositions() -> Iterator[Metric]:
    from composer.models import Composition

    family = GaugeMetricFamily(
        "composer_compositions",
        "Compositions by state and tenant (every state of each tenant that has any).",
        labels=["state", "tenant"],
    )
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    rows = Composition.objects.values_list("tenant__slug", "state").annotate(n=Count("id"))
    for tenant, state, n in rows:
        counts[tenant][state] = n
    for tenant, by_state in sorted(counts.items()):
        for state in CompositionState.values:
            family.add_metric([state, tenant], by_state.get(state, 0))
    yield family


def _jobs() -> Iterator[Metric]:
    from composer.models import Job

    waiting = (JobStatus.QUEUED, JobStatus.RUNNING)
    jobs = GaugeMetricFamily(
        "composer_jobs", "Jobs queued or running now, by kind.", labels=["kind", "status"]
    )
    counts = dict(
        ((kind, status), n)
        for kind, status, n in Job.objects.filter(status__in=waiting)
        .values_list("kind", "status")
        .annotate(n=Count("id"))
    )
    for kind in JobKind.values:
        for status in waiting:
            jobs.add_metric([kind, status.value], counts.get((kind, status.value), 0))
    yield jobs

    now = timezone.now()
    # Since it (re-)entered the queue: a retried or taken-over job has not waited since creation.
    oldest = Job.objects.filter(status=JobStatus.QUEUED).aggregate(at=Min("queued_at"))["at"]
    yield GaugeMetricFamily(
        "composer_jobs_oldest_queued_age_seconds",
        "How long the oldest queued job has waited (0 when none waits).",
        value=(now - oldest).total_seconds() if oldest else 0.0,
    )
    yield GaugeMetricFamily(
        "composer_jobs_lease_expired",
        "Running jobs whose lease expired (their worker died): the lease sweep takes them over "
        "within seconds; a lasting figure means it does not run.",
        value=Job.objects.filter(status=JobStatus.RUNNING, lease_expires_at__lt=now).count(),
    )
    resumes = CounterMetricFamily(
        "composer_job_resumes",
        "Times jobs were taken over and resumed after their worker died or lost its database "
        "connection (jobs kept in the database).",
        labels=["kind"],
    )
    sums = dict(Job.objects.values_list("kind").annotate(n=Sum("resumes")).values_list("kind", "n"))
    for kind in JobKind.values:
        resumes.add_metric([kind], sums.get(kind) or 0)
    yield resumes


def _health() -> Iterator[Metric]:
    from fabric.models import Alert, Device

    alerts = GaugeMetricFamily(
        "composer_alerts_open", "Open alerts by severity.", labels=["severity"]
    )
    by_severity = dict(
        Alert.objects.filter(state=AlertState.OPEN)
        .values_list("severity")
        .annotate(n=Count("id"))
        .values_list("severity", "n")
    )
    for severity in AlertSeverity.values:
        alerts.add_metric([severity], by_severity.get(severity, 0))
    yield alerts
    devices = GaugeMetricFamily(
        "composer_devices", "Present devices by kind and health.", labels=["kind", "health"]
    )
    by_health: dict[tuple[str, str], int] = {
        (kind, health): n
        for kind, health, n in Device.objects.exclude(state=DeviceState.ABSENT)
        .values_list("kind", "health")
        .annotate(n=Count("id"))
    }
    kinds = sorted({kind for kind, _ in by_health})
    for kind in kinds:
        for health in Health.values:
            devices.add_metric([kind, health], by_health.get((kind, health), 0))
    yield devices


def _managers() -> Iterator[Metric]:
    from django.conf import settings

    from fabric.models import FabricManager

    now = timezone.now()
    specs: list[tuple[str, str]] = [
        ("composer_manager_enabled", "1 when the fabric manager is enabled."),
        (
            "composer_manager_last_sync_timestamp_seconds",
            "When the manager's inventory last synced successfully (Unix time; 0: never).",
        ),
        (
            "composer_manager_sync_age_seconds",
            "Seconds since the manager's last successful inventory sync (absent: never).",
        ),
        ("composer_manager_sync_interval_seconds", "How often inventories are synced."),
        ("composer_manager_sync_failing", "1 when the manager's last inventory sync failed."),
        (
            "composer_manager_health_poll_age_seconds",
            "Seconds since the manager's last health poll (absent: never polled).",
        ),
        ("composer_manager_health_poll_interval_seconds", "The manager's health poll interval."),
        ("composer_manager_health_poll_failing", "1 when the manager's last health poll failed."),
    ]
    families = {name: GaugeMetricFamily(name, text, labels=["manager"]) for name, text in specs}
    sync_interval = float(settings.COMPOSER_SYNC_INTERVAL_S)
    for m in FabricManager.objects.order_by("name"):
        values: dict[str, Any] = {
            "composer_manager_enabled": int(m.is_enabled),
            "composer_manager_last_sync_timestamp_seconds": (
                m.last_synced_at.timestamp() if m.last_synced_at else 0
            ),
            "composer_manager_sync_interval_seconds": sync_interval,
            "composer_manager_sync_failing": int(bool(m.last_sync_error)),
            "composer_manager_health_poll_interval_seconds": m.health_poll_interval_s,
            "composer_manager_health_poll_failing": int(bool(m.last_health_poll_error)),
        }
        if m.last_synced_at:
            values["composer_manager_sync_age_seconds"] = (now - m.last_synced_at).total_seconds()
        if m.last_health_poll_at:
            age = (now - m.last_health_poll_at).total_seconds()
            values["composer_manager_health_poll_age_seconds"] = age
        for name, value in values.items():
            families[name].add_metric([m.name], value)
    yield from families.values()


def _outbox() -> Iterator[Metric]:
    from composer.models import Event, Job

    now = timezone.now()
    pending = Event.objects.filter(published_at__isnull=True).aggregate(
        n=Count("id"), oldest=Min("at")
    )
    yield GaugeMetricFamily(
        "composer_outbox_events_pending",
        "Live events recorded but not yet marked published (the outbox backlog).",
        value=pending["n"],
    )
    yield GaugeMetricFamily(
        "composer_outbox_oldest_event_age_seconds",
        "Age of the oldest event not yet marked published (0 when none).",
        value=(now - pending["oldest"]).total_seconds() if pending["oldest"] else 0.0,
    )
    unsent = Job.objects.filter(
        Q(status=JobStatus.QUEUED) & Q(dispatched_at__isnull=True)
    ).aggregate(n=Count("id"), oldest=Min("queued_at"))
    yield GaugeMetricFamily(
        "composer_outbox_jobs_unsent",
        "Queued jobs not yet handed to the task queue (the broker was away).",
        value=unsent["n"],
    )
    yield GaugeMetricFamily(
        "composer_outbox_oldest_unsent_job_age_seconds",
        "Age of the oldest queued job not yet handed to the task queue (0 when none).",
        value=(now - unsent["oldest"]).total_seconds() if unsent["oldest"] else 0.0,
    )
