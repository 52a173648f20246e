"""domains_refresh(): rewrite a fabric manager's failure domains from its current topology;
domains_refresh_outdated(): do it for every manager with domains counted under another
definition of the blast radius (after an upgrade that changed it)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from fabric.models import DeviceDomain, FabricManager, FailureDomain
from fabric.topology.domains import derive_domains, domain_members
from fabric.topology.load import load_graph
from fabric.topology.radius import RADIUS_VERSION, domain_impact

logger = logging.getLogger(__name__)

BATCH = 500
# The columns a refresh writes: what a domain is, what its failure loses and degrades, and
# under which definition of the blast radius that was counted.
FIELDS = (
    "kind",
    "name",
    "device_count",
    "host_count",
    "devices_degraded_count",
    "hosts_degraded_count",
    "radius_version",
)


@dataclass(frozen=True, slots=True)
class DomainRefreshResult:
    """What one refresh did: domains created, updated, deleted; memberships added, removed."""

    domains: int
    created: int
    updated: int
    deleted: int
    memberships_added: int
    memberships_removed: int

    @property
    def changed(self) -> bool:
        return bool(
            self.created
            or self.updated
            or self.deleted
            or self.memberships_added
            or self.memberships_removed
        )

    def summary(self) -> str:
        """One line for logs."""
        return (
            f"{self.domains} failure domains; created {self.created}, updated {self.updated}, "
            f"deleted {self.deleted}; memberships +{self.memberships_added} "
            f"-{self.memberships_removed}"
        )


def domains_refresh(*, manager: FabricManager) -> DomainRefreshResult:
    """Derive `manager`'s failure domains from its topology and write them.

    Domains are derived data, not history: a new one is created, a changed one (name, kind,
    blast radius counts) updated in place (its id stays, so links to it keep working), one
    whose rack, feed, enclosure, switch or link is gone is deleted with its memberships. Device
    memberships (`Device.failure_domains`) are rewritten the same way. Side effects: those
    writes, in one transaction. Queries: the graph's eight plus four reads, and one bulk
    statement per kind of change (per 500 rows), so a refresh that finds nothing to change
    costs the same at any size. Each domain's counts are its blast radius
    (`fabric.topology.radius.domain_impact`, without contributors: no query), the same
    figures its alert and the what-if show.
    """
    graph = load_graph(managers=[manager.pk])
    specs = derive_domains(graph)
    members: dict[str, list[int]] = {}
    wanted_values: dict[str, tuple[Any, ...]] = {}
    for spec in specs:  # pure: measured before the transaction, so it stays short
        devices, _ = domain_members(graph, spec)
        members[spec.key] = [graph.nodes[d].pk for d in devices]
        counts = domain_impact(graph, [spec], contributors=())[1].counts()
        wanted_values[spec.key] = (
            spec.kind,
            spec.name[:200],
            counts.devices_lost,
            counts.hosts_lost,
            counts.devices_degraded,
            counts.hosts_degraded,
            RADIUS_VERSION,
        )
    now = timezone.now()  # bulk_update does not apply auto_now
    with transaction.atomic():
        existing = {
            key: (pk, *values)
            for pk, key, *values in FailureDomain.objects.filter(manager=manager).values_list(
                "pk", "key", *FIELDS
            )
        }
        to_create: list[FailureDomain] = []
        to_update: list[FailureDomain] = []
        for key, values in wanted_values.items():
            fields = dict(zip(FIELDS, values, strict=True))
            row = existing.get(key)
            if row is None:
                to_create.append(FailureDomain(manager=manager, key=key, **fields))
            elif tuple(row[1:]) != values:
                to_update.append(
                    FailureDomain(pk=row[0], manager=manager, key=key, updated_at=now, **fields)
                )
        wanted = set(members)
        gone = [row[0] for key, row in existing.items() if key not in wanted]
        if gone:
            FailureDomain.objects.filter(pk__in=gone).delete()
        if to_create:
            FailureDomain.objects.bulk_create(to_create, batch_size=BATCH)
        if to_update:
            FailureDomain.objects.bulk_update(to_update, [*FIELDS, "updated_at"], batch_size=BATCH)
        domain_pks = dict(FailureDomain.objects.filter(manager=manager).values_list("key", "pk"))
        desired = {
            (device, domain_pks[key]) for key, devices in members.items() for device in devices
        }
        current = {
            (device, domain): pk
            for pk, device, domain in DeviceDomain.objects.filter(
                domain__manager=manager
            ).values_list("pk", "device_id", "domain_id")
        }
        stale = [pk for pair, pk in current.items() if pair not in desired]
        for start in range(0, len(stale), BATCH):
            DeviceDomain.objects.filter(pk__in=stale[start : start + BATCH]).delete()
        fresh = [
            DeviceDomain(device_id=d, domain_id=m) for d, m in desired if (d, m) not in current
        ]
        if fresh:
            DeviceDomain.objects.bulk_create(fresh, batch_size=BATCH)
    result = DomainRefreshResult(
        domains=len(specs),
        created=len(to_create),
        updated=len(to_update),
        deleted=len(gone),
        memberships_added=len(fresh),
        memberships_removed=len(stale),
    )
    logger.info("failure domains of %s refreshed: %s", manager.name, result.summary())
    return result


def domains_refresh_outdated() -> list[DomainRefreshResult]:
    """Refresh the failure domains of every manager that has one counted under another
    definition of the blast radius than this release's (`RADIUS_VERSION`).

    A migration cannot recount them (the count needs the topology code, which reads the
    current models, not a migration's historical ones), so an upgrade that changes the
    definition leaves the stored figures as they were; the beat runs this every minute, so
    the list is right within a minute of the upgrade, without waiting for an inventory sync
    (minutes or hours away, and skipped while a manager is unreachable: the domains are
    derived from the console's tables, not from the manager). Until then the list and the
    API say the figures are being recounted (`FailureDomain.counts_outdated`). One query
    when nothing is outdated. A manager whose refresh fails is logged and tried again at
    the next run.
    """
    managers = FabricManager.objects.filter(
        pk__in=FailureDomain.objects.exclude(radius_version=RADIUS_VERSION).values("manager_id")
    ).order_by("pk")
    results = []
    for manager in managers:
        try:
            results.append(domains_refresh(manager=manager))
        except Exception:
            logger.exception("failure domains of %s not recounted", manager.name)
    return results
