"""Global search: one box that finds hosts, devices, enclosures, switches, links, compositions,
tenants, alerts, jobs, pools and fabric managers, grouped by kind.

Each kind is one `Finder` in `FINDERS`: what it matches, how a row reads, and who may see it.
The search page, its "more of this kind" pages and GET /api/v1/search/ all read this registry,
so a kind is added in one place. Scoping follows the rest of the console: fabric internals
(hosts, enclosures, switches, links, managers, serial numbers) are for operators; a tenant
member finds its own compositions, jobs, tenants and the alerts that hurt them, and devices
and pools as the device and pool pages show them (availability, never serials).

A search is one bounded query per kind (the first rows, ranked: an exact name or id first,
then names that start with the text, then the rest by name), never a COUNT per kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from django.urls import NoReverseMatch, reverse

from composer.models import Composition, Job, Tenant
from composer.selectors.alerts import tenant_alerts
from fabric.choices import AlertSource
from fabric.health.wording import tenant_wordings_with
from fabric.kinds import find as find_kind
from fabric.models import Alert, Device, Enclosure, FabricManager, Host, Link, Pool, Switch
from fabric.permissions import is_operator
from fabric.selectors import pool_capacities

MAX_QUERY_LENGTH = 100
# The largest id a database integer column holds: a longer number is not an id.
_MAX_ID = 2**63 - 1


@dataclass(frozen=True)
class Hit:
    """One thing found: what it is, what it is called, a line about it, and its page."""

    kind: str
    id: int
    label: str
    detail: str
    url: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "label": self.label,
            "detail": self.detail,
            "url": self.url,
        }


@dataclass(frozen=True)
class Finder:
    """How one kind is searched.

    `rows(user, text, operator)` is the kind's matching rows the viewer may see (unordered);
    `name` is the field the ranking compares with the text; `hits(rows, operator)` says a
    page of rows (all at once, so that a kind can fetch what its lines need in one query).
    """

    kind: str
    title: str
    icon: str
    operator_only: bool
    name: str
    rows: Callable[[Any, str, bool], QuerySet[Any]]
    hits: Callable[[list[Any], bool], list[Hit]]


def _each(hit: Callable[[Any, bool], Hit]) -> Callable[[list[Any], bool], list[Hit]]:
    """A kind whose rows say themselves, one at a time."""

    def hits(rows: list[Any], operator: bool) -> list[Hit]:
        return [hit(row, operator) for row in rows]

    return hits


def _id_of(text: str) -> int | None:
    """The id the text names ("17" or "#17"), or None."""
    digits = text[1:] if text.startswith("#") else text
    if digits.isdigit() and len(digits) < 20 and int(digits) <= _MAX_ID:
        return int(digits)
    return None


def _text_match(text: str, fields: tuple[str, ...]) -> Q:
    match = Q()
    for field in fields:
        match |= Q(**{f"{field}__icontains": text})
    ident = _id_of(text)
    if ident is not None:
        match |= Q(pk=ident)
    return match


def _url(name: str, pk: int) -> str:
    return reverse(name, args=[pk])


def _serial(serial: str) -> str:
    return f"serial {serial}" if serial else ""


def _joined(*parts: object) -> str:
    return " · ".join(str(p) for p in parts if p not in (None, ""))


# --- the fabric's elements (operators) ---------------------------------------------------


def _component_rows(model: Any, *related: str) -> Callable[[Any, str, bool], QuerySet[Any]]:
    def rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
        match = _text_match(text, ("name", "model", "vendor", "serial")) | Q(
            external_id__iexact=text
        )
        return model.objects.filter(match).select_related(*related)

    return rows


def _host_hit(host: Host, operator: bool) -> Hit:
    return Hit(
        "host",
        host.pk,
        host.name,
        _joined(
            host.get_state_display(),
            f"{host.cores} cores",
            f"{host.memory_gib} GiB",
            host.rack.name if host.rack else "",
            _serial(host.serial),
        ),
        _url("fabric:host_detail", host.pk),
    )


def _enclosure_hit(enclosure: Enclosure, operator: bool) -> Hit:
    return Hit(
        "enclosure",
        enclosure.pk,
        enclosure.name,
        _joined(
            enclosure.get_kind_display(),
            enclosure.model,
            enclosure.get_state_display(),
            enclosure.rack.name if enclosure.rack else "",
            _serial(enclosure.serial),
        ),
        _url("fabric:enclosure_detail", enclosure.pk),
    )


def _switch_hit(switch: Switch, operator: bool) -> Hit:
    return Hit(
        "switch",
        switch.pk,
        switch.name,
        _joined(
            switch.get_protocol_display(),
            switch.get_tier_display(),
            switch.model,
            switch.get_state_display(),
            _serial(switch.serial),
        ),
        _url("fabric:switch_detail", switch.pk),
    )


_END_NAMES = ("switch__name", "host__name", "enclosure__name")


def _link_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    """Links by the name of what either end plugs into, or by id."""
    fields = tuple(f"{end}__{name}" for end in ("a_port", "b_port") for name in _END_NAMES)
    return Link.objects.filter(_text_match(text, fields)).select_related(
        *(f"{end}__{owner}" for end in ("a_port", "b_port") for owner in _OWNERS)
    )


_OWNERS = ("switch", "host", "enclosure")


def _port_label(port: Any) -> str:
    owner = port.switch or port.host or port.enclosure
    return f"{owner.name}:{port.name}" if owner else port.name


def _link_hit(link: Link, operator: bool) -> Hit:
    return Hit(
        "link",
        link.pk,
        f"{_port_label(link.a_port)} ↔ {_port_label(link.b_port)}",
        _joined(
            link.get_state_display(), f"{link.bandwidth_gbps:g} Gb/s", link.get_health_display()
        ),
        _link_url(link.pk),
    )


def _link_url(pk: int) -> str:
    """A link's own page, where the console has one; else the topology, which draws it."""
    try:
        return _url("fabric:link_detail", pk)
    except NoReverseMatch:
        return reverse("fabric:topology")


def _manager_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    return FabricManager.objects.filter(_text_match(text, ("name", "driver")))


def _manager_hit(manager: FabricManager, operator: bool) -> Hit:
    return Hit(
        "manager",
        manager.pk,
        manager.name,
        _joined(manager.driver, "enabled" if manager.is_enabled else "disabled"),
        _url("fabric:manager_detail", manager.pk),
    )


# --- what tenants see too ------------------------------------------------------------------


def _device_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    fields = ("name", "model", "vendor", "serial") if operator else ("name", "model", "vendor")
    match = _text_match(text, fields)
    if operator:
        match |= Q(external_id__iexact=text)
    return Device.objects.filter(match).select_related("pool")


def _device_hit(device: Device, operator: bool) -> Hit:
    kind = find_kind(device.kind)
    return Hit(
        "device",
        device.pk,
        device.name,
        _joined(
            kind.label if kind else device.kind,
            device.model,
            device.pool.name if device.pool else "",
            device.get_state_display(),
            _serial(device.serial) if operator else "",
        ),
        _url("fabric:device_detail", device.pk),
    )


def _pool_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    return Pool.objects.filter(_text_match(text, ("name", "slug", "model", "kind")))


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
                _joined(
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
        .filter(_text_match(text, fields))
        .select_related("tenant", "host")
    )


def _composition_hit(composition: Composition, operator: bool) -> Hit:
    return Hit(
        "composition",
        composition.pk,
        composition.name,
        _joined(
            composition.tenant.name,
            composition.get_state_display(),
            composition.host.name if operator and composition.host else "",
        ),
        _url("composer:composition_detail", composition.pk),
    )


def _tenant_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    tenants = Tenant.objects.all() if operator else Tenant.objects.filter(memberships__user=user)
    return tenants.filter(_text_match(text, ("name", "slug")))


def _tenant_hit(tenant: Tenant, operator: bool) -> Hit:
    return Hit(
        "tenant",
        tenant.pk,
        tenant.name,
        _joined(tenant.slug, "" if tenant.is_active else "inactive", "its compositions"),
        f"{reverse('composer:composition_list')}?tenant={tenant.pk}",
    )


def _alert_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    """Operators search the alert's own message and source; members the words they are
    shown (`tenant_alert_message`: the kind of element and what is wrong, never its name),
    matched as the (source type, rule) pairs whose wording holds the text."""
    if operator:
        return Alert.objects.filter(_text_match(text, ("message", "source_name", "rule")))
    match = _text_match(text, ())
    for source, rule in tenant_wordings_with(text, AlertSource.values):
        match |= Q(source_type=source, rule=rule)
    return tenant_alerts(user, Alert.objects.filter(match)) if match else Alert.objects.none()


_SOURCE_PAGES = {
    "device": "fabric:device_detail",
    "host": "fabric:host_detail",
    "enclosure": "fabric:enclosure_detail",
    "switch": "fabric:switch_detail",
    "fabric_manager": "fabric:manager_detail",
}


def _alert_hit(alert: Alert, operator: bool) -> Hit:
    """Operators go to the element that raised it; members to their alert list."""
    page = _SOURCE_PAGES.get(alert.source_type) if operator else None
    if page:
        url = _url(page, alert.source_id)
    elif operator and alert.source_type == "link":
        url = _link_url(alert.source_id)
    else:
        url = f"{reverse('composer:alert_list')}?state=all"
    message = alert.message if operator else alert.tenant_message
    return Hit(
        "alert",
        alert.pk,
        message,
        _joined(
            alert.get_severity_display(),
            alert.get_state_display(),
            alert.source_name if operator else "",
            f"opened {alert.opened_at:%Y-%m-%d %H:%M}",
        ),
        url,
    )


def _job_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    fields = ("kind", "target_label", "message")
    return Job.objects.for_user(user).filter(_text_match(text, fields)).select_related("tenant")


def _job_hit(job: Job, operator: bool) -> Hit:
    return Hit(
        "job",
        job.pk,
        f"#{job.pk} {job.get_kind_display()}{f' {job.target_label}' if job.target_label else ''}",
        _joined(job.get_status_display(), job.tenant.name if job.tenant else "", job.message),
        _url("composer:job_detail", job.pk),
    )


FINDERS: dict[str, Finder] = {
    finder.kind: finder
    for finder in (
        Finder(
            "host",
            "Hosts",
            "bi-pc-display",
            True,
            "name",
            _component_rows(Host, "rack"),
            _each(_host_hit),
        ),
        Finder("device", "Devices", "bi-gpu-card", False, "name", _device_rows, _each(_device_hit)),
        Finder(
            "enclosure",
            "Enclosures",
            "bi-hdd-stack",
            True,
            "name",
            _component_rows(Enclosure, "rack"),
            _each(_enclosure_hit),
        ),
        Finder(
            "switch",
            "Switches",
            "bi-diagram-2",
            True,
            "name",
            _component_rows(Switch),
            _each(_switch_hit),
        ),
        Finder("link", "Links", "bi-link-45deg", True, "pk", _link_rows, _each(_link_hit)),
        Finder(
            "composition",
            "Compositions",
            "bi-boxes",
            False,
            "name",
            _composition_rows,
            _each(_composition_hit),
        ),
        Finder("pool", "Pools", "bi-collection", False, "name", _pool_rows, _pool_hits),
        Finder("tenant", "Tenants", "bi-people", False, "name", _tenant_rows, _each(_tenant_hit)),
        Finder("alert", "Alerts", "bi-bell", False, "message", _alert_rows, _each(_alert_hit)),
        Finder("job", "Jobs", "bi-list-task", False, "kind", _job_rows, _each(_job_hit)),
        Finder(
            "manager",
            "Fabric managers",
            "bi-router",
            True,
            "name",
            _manager_rows,
            _each(_manager_hit),
        ),
    )
}


def search_kinds(*, operator: bool) -> list[Finder]:
    """The kinds the viewer may search, in the order the results show them."""
    return [f for f in FINDERS.values() if operator or not f.operator_only]


def ranked(finder: Finder, *, user: Any, text: str) -> QuerySet[Any]:
    """The kind's matches the viewer may see, best first: the id or exact name, then names
    that start with the text, then the rest by name (and id, so pages are stable)."""
    rows = finder.rows(user, text, is_operator(user))
    whens = []
    ident = _id_of(text)
    if ident is not None:
        whens.append(When(pk=ident, then=Value(0)))
    if finder.name != "pk":
        whens.append(When(**{f"{finder.name}__iexact": text}, then=Value(0)))
        whens.append(When(**{f"{finder.name}__istartswith": text}, then=Value(1)))
    rank = Case(*whens, default=Value(2), output_field=IntegerField()) if whens else Value(2)
    order = ["search_rank", finder.name, "pk"] if finder.name != "pk" else ["search_rank", "pk"]
    return rows.annotate(search_rank=rank).order_by(*order)


@dataclass(frozen=True)
class Group:
    """The first hits of one kind, and whether there are more than those."""

    finder: Finder
    hits: list[Hit]
    more: bool


def search(
    *, user: Any, text: str, per_kind: int = 5, kinds: list[str] | None = None
) -> list[Group]:
    """The groups with at least one hit, in `search_kinds` order; one query per kind."""
    operator = is_operator(user)
    groups = []
    for finder in search_kinds(operator=operator):
        if kinds and finder.kind not in kinds:
            continue
        rows = list(ranked(finder, user=user, text=text)[: per_kind + 1])
        if rows:
            hits = finder.hits(rows[:per_kind], operator)
            groups.append(Group(finder=finder, hits=hits, more=len(rows) > per_kind))
    return groups
