"""Search kinds tenant members see too: devices and pools (as the device and pool pages show
them), and their own compositions, tenants, alerts and jobs."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.urls import reverse

from composer.models import Composition, Job, Tenant
from composer.search.base import Finder, Hit, each, joined, page_url, serial_words, text_match
from composer.selectors.alerts import tenant_alerts
from fabric.choices import AlertSource
from fabric.health.wording import tenant_wordings_with
from fabric.kinds import find as find_kind
from fabric.models import Alert, Device, Pool
from fabric.selectors import pool_capacities


def _device_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    fields = ("name", "model", "vendor", "serial") if operator else ("name", "model", "vendor")
    match = text_match(text, fields)
    if operator:
        match |= Q(external_id__iexact=text)
    return Device.objects.filter(match).select_related("pool")


def _device_hit(device: Device, operator: bool) -> Hit:
    kind = find_kind(device.kind)
    return Hit(
        "device",
        device.pk,
        device.name,
        joined(
            kind.label if kind else device.kind,
            device.model,
            device.pool.name if device.pool else "",
            device.get_state_display(),
            serial_words(device.serial) if operator else "",
        ),
        page_url("fabric:device_detail", device.pk),
    )


def _pool_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    return Pool.objects.filter(text_match(text, ("name", "slug", "model", "kind")))


def _pool_hits(pools: list[Pool], operator: bool) -> list[Hit]:
    """Pools with what is free of them now (`pool_capacities`: two queries for the page)."""
    capacities = {
        c.pool.pk: c
        for c in pool_capacities(pools=Pool.objects.filter(pk__in=[p.pk for p in pools]))
    }
    hits = []
    for pool in pools:
        kind = find_kind(pool.kind)
        room = capacities[pool.pk]
        hits.append(
            Hit(
                "pool",
                pool.pk,
                pool.name,
                joined(
                    kind.label if kind else pool.kind,
                    pool.model or "any model",
                    f"{room.free:g} of {room.capacity:g} {room.unit} free",
                ),
                reverse("composer:pool_detail", args=[pool.slug]),
            )
        )
    return hits


def _composition_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    fields = ("name", "host__name", "tenant__name") if operator else ("name", "tenant__name")
    return (
        Composition.objects.for_user(user)
        .filter(text_match(text, fields))
        .select_related("tenant", "host")
    )


def _composition_hit(composition: Composition, operator: bool) -> Hit:
    return Hit(
        "composition",
        composition.pk,
        composition.name,
        joined(
            composition.tenant.name,
            composition.get_state_display(),
            composition.host.name if operator and composition.host else "",
        ),
        page_url("composer:composition_detail", composition.pk),
    )


def _tenant_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    tenants = Tenant.objects.all() if operator else Tenant.objects.filter(memberships__user=user)
    return tenants.filter(text_match(text, ("name", "slug")))


def _tenant_hit(tenant: Tenant, operator: bool) -> Hit:
    return Hit(
        "tenant",
        tenant.pk,
        tenant.name,
        joined(tenant.slug, "" if tenant.is_active else "inactive", "its compositions"),
        f"{reverse('composer:composition_list')}?tenant={tenant.pk}",
    )


def _alert_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    """Operators search the alert's own message and source; members the words they are
    shown (`tenant_alert_message`: the kind of element and what is wrong, never its name),
    matched as the (source type, rule) pairs whose wording holds the text."""
    if operator:
        return Alert.objects.filter(text_match(text, ("message", "source_name", "rule")))
    match = text_match(text, ())
    for source, rule in tenant_wordings_with(text, AlertSource.values):
        match |= Q(source_type=source, rule=rule)
    return tenant_alerts(user, Alert.objects.filter(match)) if match else Alert.objects.none()


_SOURCE_PAGES = {
    "device": "fabric:device_detail",
    "host": "fabric:host_detail",
    "enclosure": "fabric:enclosure_detail",
    "switch": "fabric:switch_detail",
    "link": "fabric:link_detail",
    "rack": "fabric:rack_detail",
    "power_feed": "fabric:power_feed_detail",
    "fabric_manager": "fabric:manager_detail",
}


def _alert_hit(alert: Alert, operator: bool) -> Hit:
    """Operators go to the element that raised it; members to their alert list."""
    page = _SOURCE_PAGES.get(alert.source_type) if operator else None
    url = page_url(page, alert.source_id) if page else f"{reverse('composer:alert_list')}?state=all"
    message = alert.message if operator else alert.tenant_message
    return Hit(
        "alert",
        alert.pk,
        message,
        joined(
            alert.get_severity_display(),
            alert.get_state_display(),
            alert.source_name if operator else "",
            f"opened {alert.opened_at:%Y-%m-%d %H:%M}",
        ),
        url,
    )


def _job_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    fields = ("kind", "target_label", "message")
    return Job.objects.for_user(user).filter(text_match(text, fields)).select_related("tenant")


def _job_hit(job: Job, operator: bool) -> Hit:
    return Hit(
        "job",
        job.pk,
        f"#{job.pk} {job.get_kind_display()}{f' {job.target_label}' if job.target_label else ''}",
        joined(job.get_status_display(), job.tenant.name if job.tenant else "", job.message),
        page_url("composer:job_detail", job.pk),
    )


CONSOLE_FINDERS = (
    Finder("device", "Devices", "bi-gpu-card", False, "name", _device_rows, each(_device_hit)),
    Finder(
        "composition",
        "Compositions",
        "bi-boxes",
        False,
        "name",
        _composition_rows,
        each(_composition_hit),
    ),
    Finder("pool", "Pools", "bi-collection", False, "name", _pool_rows, _pool_hits),
    Finder("tenant", "Tenants", "bi-people", False, "name", _tenant_rows, each(_tenant_hit)),
    # Newest first among equals; a member's rank never reads the operators' message.
    Finder(
        "alert",
        "Alerts",
        "bi-bell",
        False,
        "message",
        _alert_rows,
        each(_alert_hit),
        order=("-opened_at",),
        private_name=True,
    ),
    Finder(
        "job",
        "Jobs",
        "bi-list-task",
        False,
        "kind",
        _job_rows,
        each(_job_hit),
        order=("-created_at",),
    ),
)
