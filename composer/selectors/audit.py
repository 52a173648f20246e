"""The audit page's one read path: every audit trail merged, filtered and ordered in SQL.

Four trails record a change of state with who, when and from where:

- `fabric.ChangeRecord`: the physical world (devices, hosts, switches, fabric managers,
  pools, alerts acknowledged, Redfish sessions, ...) and the composer's settings written
  through the API and the admin (templates, quotas, tenants, memberships:
  `composer.services.changes`), field by field [before, after], and API tokens issued
  and revoked;
- `composer.StateChange`: each move of a composition's state (holds included);
- `composer.Job`: each piece of background work someone asked for (sync, compose, ...);
- `composer.ReconcileRun`: each reconcile pass an operator asked for.

A page is found in two steps so that no table is read into Python: one UNION of
(trail, id, time) over the filtered trails, ordered newest first and sliced in the
database, then one query per trail for the rows of that page. The query count is the
same for ten rows and ten million.

Tenancy: operators read every trail; a tenant member only its compositions' state
changes, its tenants' jobs on compositions (`for_user` of each model) and the
ChangeRecords of its tenants' own quotas (those with a `ChangeAudience` row naming one of
its tenants), never another ChangeRecord (fabric internals, templates, tenants,
memberships) nor a reconcile run, and never a remote address.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import CharField, F, Q, QuerySet, Value
from django.db.models.functions import Cast, Concat
from django.urls import NoReverseMatch, reverse

from composer.models import ChangeAudience, Job, ReconcileRun, StateChange
from composer.services.api_tokens import API_TOKEN
from composer.services.changes import AUDITED_KIND_LABELS, TENANT_CHANGE_KINDS
from composer.templatetags.composer_tags import change_rows
from fabric.models import ChangeRecord
from fabric.permissions import is_operator
from fabric.services.history import TARGET_TYPES

__all__ = [
    "KIND_LABELS",
    "AuditEntry",
    "AuditFilters",
    "audit_entries",
    "audit_index",
    "audit_kinds",
    "audit_stream",
]

# Trails, as the UNION names them.
CHANGE, STATE, JOB, RECONCILE = "change", "state", "job", "reconcile"

# What an entry is about, in the console's words. ChangeRecord kinds are its `target_type`.
KIND_LABELS: dict[str, str] = {
    "composition": "Composition",
    "job": "Job",
    "reconcile": "Reconcile run",
    **{kind: kind.replace("_", " ").capitalize() for kind in TARGET_TYPES.values()},
    "alert": "Alert",
    "redfishsession": "Redfish session",
    **AUDITED_KIND_LABELS,
    API_TOKEN: "API token",
}
TENANT_KINDS = ("composition", "job", *TENANT_CHANGE_KINDS)
# Kinds a tenant may see of a job's target (the job list's rule: fabric pages are operators').
_TENANT_JOB_TARGETS = ("composition",)

# The page of each kind, where one exists (by URL name, the object's id as argument).
_PAGES: dict[str, str] = {
    "composition": "composer:composition_detail",
    "job": "composer:job_detail",
    "device": "fabric:device_detail",
    "host": "fabric:host_detail",
    "enclosure": "fabric:enclosure_detail",
    "switch": "fabric:switch_detail",
    "rack": "fabric:rack_detail",
    "power_feed": "fabric:power_feed_detail",
    "link": "fabric:link_detail",
    "fabric_manager": "fabric:manager_detail",
    "webhook": "composer:webhook_detail",
}
_LIST_PAGES = {
    "alert": "composer:alert_list",
    "reconcile": "composer:reconcile_list",
    "notificationroute": "composer:route_list",
    "silence": "composer:silence_list",
}


# How a job and a reconcile run are named, in SQL too so that filters match what is shown.
_JOB_SOURCE = Concat(F("kind"), Value(" job "), Cast("pk", CharField()), output_field=CharField())
_RUN_LABEL = Concat(Value("Reconcile run "), Cast("pk", CharField()), output_field=CharField())


def audit_kinds(*, operator: bool) -> list[tuple[str, str]]:
    """The kinds a viewer may filter by, as (value, label) choices."""
    kinds = KIND_LABELS if operator else {k: KIND_LABELS[k] for k in TENANT_KINDS}
    return sorted(kinds.items(), key=lambda item: item[1])


@dataclass(frozen=True)
class AuditFilters:
    """What the viewer asked for; empty means "any". Values arrive validated (forms)."""

    who: str = ""  # a username, exactly (any case)
    kind: str = ""  # a KIND_LABELS key
    text: str = ""  # part of the label (a composition's or device's name, ...)
    since: datetime | None = None
    until: datetime | None = None
    source: str = ""  # part of the source ("console", "sync job 12"), or of the address

    @property
    def any(self) -> bool:
        return bool(self.who or self.kind or self.text or self.since or self.until or self.source)


@dataclass(frozen=True)
class AuditEntry:
    """One audited change as every reader shows it (page, exports, API)."""

    at: datetime
    trail: str
    id: int
    kind: str
    kind_label: str
    object_id: int | None
    label: str
    url: str | None
    action: str
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)
    message: str = ""
    who: str = ""  # the user's name; empty for work nobody asked for (a job, beat)
    source: str = ""
    remote_addr: str | None = None  # operators only

    @property
    def key(self) -> str:
        """Unique across trails (the page's row ids, the API's `id`)."""
        return f"{self.trail}-{self.id}"

    def as_dict(self) -> dict[str, Any]:
        """The entry as JSON (exports and the API): changes as {field, before, after}."""
        return {
            "id": self.key,
            "at": self.at.isoformat(),
            "kind": self.kind,
            "object_id": self.object_id,
            "label": self.label,
            "action": self.action,
            "changes": [{"field": f, "before": b, "after": a} for f, b, a in self.changes],
            "message": self.message,
            "who": self.who,
            "source": self.source,
            "remote_addr": self.remote_addr,
        }


def _span(qs: QuerySet[Any], moment: str, filters: AuditFilters) -> QuerySet[Any]:
    if filters.since is not None:
        qs = qs.filter(**{f"{moment}__gte": filters.since})
    if filters.until is not None:
        qs = qs.filter(**{f"{moment}__lte": filters.until})
    return qs


def _from_where(fields: Sequence[str], text: str, *, operator: bool) -> Q:
    """Source text matches the source, and (for operators only) the remote address."""
    shown = [name for name in fields if operator or not name.endswith("remote_addr")]
    return reduce(or_, (Q(**{f"{name}__icontains": text}) for name in shown), Q(pk__in=[]))


def _change_records(user: Any, *, operator: bool) -> QuerySet[ChangeRecord]:
    """The ChangeRecords the viewer may read: every one for operators; for a member, those
    of its tenants' own things (a quota), found through their audience rows."""
    if operator:
        return ChangeRecord.objects.all()
    if not user.is_authenticated:
        return ChangeRecord.objects.none()
    audience = ChangeAudience.objects.filter(tenant__memberships__user=user).values("record")
    return ChangeRecord.objects.filter(target_type__in=TENANT_CHANGE_KINDS, pk__in=audience)


def _trails(user: Any, filters: AuditFilters) -> dict[str, QuerySet[Any]]:
    """Each trail the viewer may read, filtered; a trail the filters rule out is left out."""
    operator = is_operator(user)
    kind = filters.kind
    trails: dict[str, QuerySet[Any]] = {}
    if kind not in ("composition", "job", "reconcile") and (
        operator or kind in ("", *TENANT_CHANGE_KINDS)
    ):
        qs: QuerySet[Any] = _span(_change_records(user, operator=operator), "at", filters)
        if kind:
            qs = qs.filter(target_type=kind)
        if filters.who:
            qs = qs.filter(actor__username__iexact=filters.who)
        if filters.text:
            qs = qs.filter(target_label__icontains=filters.text)
        if filters.source:
            fields = ("source", "remote_addr")
            qs = qs.filter(_from_where(fields, filters.source, operator=operator))
        trails[CHANGE] = qs.annotate(moment=F("at"))
    if kind in ("", "composition"):
        qs = _span(StateChange.objects.for_user(user), "at", filters)
        if filters.who:
            qs = qs.filter(actor__username__iexact=filters.who)
        if filters.text:
            qs = qs.filter(composition__name__icontains=filters.text)
        if filters.source:
            fields = ("source", "remote_addr")
            qs = qs.filter(_from_where(fields, filters.source, operator=operator))
        trails[STATE] = qs.annotate(moment=F("at"))
    if kind in ("", "job"):
        qs = _span(Job.objects.for_user(user), "created_at", filters)
        if not operator:
            qs = qs.filter(target_type__in=_TENANT_JOB_TARGETS)
        if filters.who:
            qs = qs.filter(requested_by__username__iexact=filters.who)
        if filters.text:
            qs = qs.filter(target_label__icontains=filters.text)
        if filters.source:
            # A job's "from where" is the job itself, named as its changes name it.
            qs = qs.annotate(job_source=_JOB_SOURCE).filter(job_source__icontains=filters.source)
        trails[JOB] = qs.annotate(moment=F("created_at"))
    if operator and kind in ("", "reconcile"):
        qs = _span(ReconcileRun.objects.filter(requested_by__isnull=False), "created_at", filters)
        if filters.who:
            qs = qs.filter(requested_by__username__iexact=filters.who)
        if filters.text:
            qs = qs.annotate(run_label=_RUN_LABEL).filter(run_label__icontains=filters.text)
        if filters.source:
            qs = qs.filter(_from_where(("remote_addr",), filters.source, operator=True))
        trails[RECONCILE] = qs.annotate(moment=F("created_at"))
    return trails


def audit_index(*, user: Any, filters: AuditFilters) -> QuerySet[Any] | None:
    """(trail, id, moment) of every entry the viewer may see that the filters select,
    newest first, as one lazy query (slice it); None when no trail can match."""
    parts = [
        qs.order_by()
        .annotate(trail=Value(name, output_field=CharField()), row=F("pk"))
        .values_list("trail", "row", "moment")
        for name, qs in _trails(user, filters).items()
    ]
    if not parts:
        return None
    index = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    return index.order_by("-moment", "-row", "trail")


def _page(kind: str, object_id: int | None, *, operator: bool) -> str | None:
    if kind in _LIST_PAGES and operator:
        return reverse(_LIST_PAGES[kind])
    name = _PAGES.get(kind)
    if name is None or object_id is None or (not operator and kind not in TENANT_KINDS):
        return None
    try:
        return reverse(name, args=[object_id])
    except NoReverseMatch:
        return None


def _who(user: Any) -> str:
    return str(user.get_username()) if user is not None else ""


def _entry(
    trail: str, kind: str, row_id: int, object_id: int | None, *, operator: bool, **fields: Any
) -> AuditEntry:
    """An entry of `kind`, named and linked as every trail names and links it."""
    return AuditEntry(
        trail=trail,
        id=row_id,
        kind=kind,
        kind_label=KIND_LABELS.get(kind, kind.replace("_", " ").capitalize()),
        object_id=object_id,
        url=_page(kind, object_id, operator=operator),
        **fields,
    )


def _change(row: ChangeRecord, operator: bool) -> AuditEntry:
    return _entry(
        CHANGE,
        row.target_type,
        row.pk,
        row.target_id,
        operator=operator,
        at=row.at,
        label=row.target_label,
        action=row.get_action_display(),
        changes=change_rows(row.changes),
        message=row.message,
        who=_who(row.actor),
        source=row.source,
        remote_addr=row.remote_addr if operator else None,
    )


def _state(row: StateChange, operator: bool) -> AuditEntry:
    return _entry(
        STATE,
        "composition",
        row.pk,
        row.composition_id,
        operator=operator,
        at=row.at,
        label=row.composition.name,
        action="State changed",
        changes=[("state", row.from_state or None, row.to_state)],
        message=row.reason,
        who=_who(row.actor),
        source=row.source,
        remote_addr=row.remote_addr if operator else None,
    )


def _job(row: Job, operator: bool) -> AuditEntry:
    target = f": {row.target_label}" if row.target_label else ""
    return _entry(
        JOB,
        "job",
        row.pk,
        row.pk,
        operator=operator,
        at=row.created_at,
        label=f"#{row.pk} {row.get_kind_display()}{target}",
        action="Requested",
        message=row.message,
        who=_who(row.requested_by),
        source=f"{row.kind} job {row.pk}",  # as _JOB_SOURCE
    )


def _reconcile(row: ReconcileRun) -> AuditEntry:
    # Console or API is not recorded on the run; its address is.
    return _entry(
        RECONCILE,
        "reconcile",
        row.pk,
        row.pk,
        operator=True,
        at=row.created_at,
        label=f"Reconcile run {row.pk}",
        action="Requested",
        message=row.error,
        who=_who(row.requested_by),
        remote_addr=row.remote_addr,
    )


def audit_entries(keys: Iterable[tuple[str, int, Any]], *, user: Any) -> list[AuditEntry]:
    """The entries of a slice of `audit_index`, in its order: one query per trail present.

    Rows are re-read through the same scoping as the index, so a key from elsewhere finds
    nothing the viewer may not see."""
    keys = list(keys)
    operator = is_operator(user)
    wanted: dict[str, list[int]] = {}
    for trail, row, _moment in keys:
        wanted.setdefault(trail, []).append(row)
    found: dict[tuple[str, int], AuditEntry] = {}
    if CHANGE in wanted:
        changes = _change_records(user, operator=operator).select_related("actor")
        for c in changes.filter(pk__in=wanted[CHANGE]):
            found[CHANGE, c.pk] = _change(c, operator)
    if STATE in wanted:
        states = StateChange.objects.for_user(user).select_related("actor", "composition")
        for s in states.filter(pk__in=wanted[STATE]):
            found[STATE, s.pk] = _state(s, operator)
    if JOB in wanted:
        jobs = Job.objects.for_user(user).select_related("requested_by")
        for j in jobs.filter(pk__in=wanted[JOB]):
            found[JOB, j.pk] = _job(j, operator)
    if RECONCILE in wanted and operator:
        runs = ReconcileRun.objects.select_related("requested_by")
        for r in runs.filter(pk__in=wanted[RECONCILE]):
            found[RECONCILE, r.pk] = _reconcile(r)
    return [found[t, r] for t, r, _m in keys if (t, r) in found]


def audit_stream(*, user: Any, filters: AuditFilters, batch: int = 500) -> Iterator[AuditEntry]:
    """Every entry the filters select, newest first, read `batch` at a time (exports)."""
    index = audit_index(user=user, filters=filters)
    if index is None:
        return
    start = 0
    while True:
        keys = list(index[start : start + batch])
        yield from audit_entries(keys, user=user)
        if len(keys) < batch:
            return
        start += batch
