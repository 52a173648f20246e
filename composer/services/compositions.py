"""Composition services: preview, request (validate, quota, place, claim, queue), decompose.

The request path writes once, in one transaction: the composition row and its audit
trail, the claimed allocations and the compose job, enqueued after commit. Bad input
(rule 4) raises a ComposerError subclass naming the field before anything is written; a
request the fabric cannot satisfy now is kept as a REJECTED composition with the reason
and the placement funnel.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q, Sum

from composer.choices import (
    ACTIVE_COMPOSITION_STATES,
    CompositionState,
    JobKind,
    JobStatus,
)
from composer.errors import ClaimConflict, InvalidTransition, QuotaExceeded, SpecError
from composer.models import Allocation, Composition, Job, Quota, StateChange, Template, Tenant
from composer.placement.engine import place
from composer.placement.load import build_snapshot
from composer.placement.request import DevicePick, Placement, Rejection
from composer.placement.snapshot import Snapshot
from composer.services.allocations import Claim, allocations_claim
from composer.services.jobs import _enqueue
from composer.specs import spec_normalise, spec_to_request
from composer.states import composition_transition
from fabric.choices import ComponentState, DeviceKind, DeviceState
from fabric.models import Device, Host

logger = logging.getLogger(__name__)

__all__ = [
    "COMPOSITION_TARGET",
    "composition_decompose",
    "composition_preview",
    "composition_request",
    "placement_as_dict",
]

COMPOSITION_TARGET = "composition"
# One placement decision at a time (PostgreSQL advisory lock, held to commit): a request
# that lost a claim then re-places on a snapshot that includes the winner's claim, so
# concurrent requests get every free device instead of colliding on the same first choice.
PLACEMENT_LOCK_KEY = 0x0C0_3905_E  # arbitrary, fixed: "composer placement"
KIND_LABELS = dict(DeviceKind.choices)


# --- validation against the fabric ------------------------------------------------------


def _resolve_host(value: Any) -> Host | None:
    if value is None:
        return None
    hosts = Host.objects.exclude(state=ComponentState.ABSENT)
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        host = hosts.filter(pk=int(value)).first()
        if host is None:
            raise SpecError(f"There is no host with id {value}.", field="host")
        return host
    matches = list(hosts.filter(name=value)[:2])
    if not matches:
        raise SpecError(f"There is no host named {value!r}.", field="host")
    if len(matches) > 1:
        raise SpecError(f"Several hosts are named {value!r}; give its id.", field="host")
    return matches[0]


def _check_against_fabric(spec: Mapping[str, Any]) -> Host | None:
    """SpecError for what the fabric can never satisfy: unknown models, more devices, GiB,
    TB or cores than exist at all, a host that does not exist. Returns the asked-for host."""
    present = Device.objects.exclude(state=DeviceState.ABSENT)
    totals = {
        (row["kind"], row["model"]): row
        for row in present.values("kind", "model").annotate(
            n=Count("id"), gib=Sum("memory_gib"), gb=Sum("capacity_gb")
        )
    }
    for index, item in enumerate(spec["items"]):
        kind, model = item["kind"], item["model"]
        label = KIND_LABELS.get(kind, kind)
        of_kind = {m: row["n"] for (k, m), row in totals.items() if k == kind}
        if model is not None and model not in of_kind:
            known = ", ".join(sorted(m for m in of_kind if m)) or "none"
            raise SpecError(
                f"Unknown {label} model {model!r}; the fabric has: {known}.",
                field=f"items[{index}].model",
            )
        have = of_kind.get(model, 0) if model is not None else sum(of_kind.values())
        if item["count"] > have:
            what = f"{label}s ({model})" if model else f"{label}s"
            raise SpecError(
                f"The fabric has {have} {what} in all; {item['count']} asked.",
                field=f"items[{index}].count",
            )
    memory = sum(row["gib"] or 0 for (k, _), row in totals.items() if k == DeviceKind.CXL_MEMORY)
    if spec["memory_gib"] > memory:
        raise SpecError(
            f"The fabric has {memory:,} GiB of CXL memory in all; {spec['memory_gib']:,} asked.",
            field="memory_gib",
        )
    storage_tb = sum(row["gb"] or 0 for (k, _), row in totals.items() if k == DeviceKind.NVME)
    storage_tb /= 1000
    if spec["storage_tb"] > storage_tb:
        raise SpecError(
            f"The fabric has {storage_tb:,.1f} TB of NVMe in all; {spec['storage_tb']:,} asked.",
            field="storage_tb",
        )
    host = _resolve_host(spec["host"])
    if spec["cores"]:
        hosts = [host] if host else Host.objects.exclude(state=ComponentState.ABSENT)
        most = max((h.cores for h in hosts), default=0)
        if spec["cores"] > most:
            raise SpecError(
                f"No host has {spec['cores']} cores; the largest has {most}.", field="cores"
            )
    return host


# --- quotas -------------------------------------------------------------------------------


def _quota_check(tenant: Tenant, spec: Mapping[str, Any]) -> None:
    """QuotaExceeded naming the quota and the excess when the request does not fit."""
    quotas = list(Quota.objects.filter(tenant=tenant))
    if not quotas:
        return
    held = (
        Allocation.objects.filter(
            composition__tenant=tenant,
            composition__state__in=ACTIVE_COMPOSITION_STATES,
            released_at__isnull=True,
        )
        .values("device__kind", "device__model")
        .annotate(
            whole=Count("id", filter=Q(gib__isnull=True)),
            sliced_gib=Sum("gib"),
            whole_gb=Sum("device__capacity_gb", filter=Q(gib__isnull=True)),
        )
    )
    in_use: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in held:
        for key in ((row["device__kind"], row["device__model"]), (row["device__kind"], "")):
            in_use[key]["n"] += row["whole"] or 0
            in_use[key]["gib"] += row["sliced_gib"] or 0
            in_use[key]["tb"] += (row["whole_gb"] or 0) / 1000
    for quota in quotas:
        used = in_use[(quota.kind, quota.model)]
        checks: list[tuple[float | None, float, float, str, str]] = []
        if quota.max_count is not None:
            asked = 0
            field = ""
            for index, item in enumerate(spec["items"]):
                if item["kind"] == quota.kind and (not quota.model or item["model"] == quota.model):
                    asked += item["count"]
                    field = field or f"items[{index}].count"
            checks.append((quota.max_count, used["n"], asked, "", field))
        if quota.max_memory_gib is not None and quota.kind == DeviceKind.CXL_MEMORY:
            checks.append(
                (quota.max_memory_gib, used["gib"], spec["memory_gib"], " GiB", "memory_gib")
            )
        if quota.max_storage_tb is not None and quota.kind == DeviceKind.NVME:
            checks.append(
                (quota.max_storage_tb, used["tb"], spec["storage_tb"], " TB", "storage_tb")
            )
        for limit, current, asked, unit, field in checks:
            if asked and limit is not None and current + asked > limit:
                raise QuotaExceeded(
                    f"Over the {quota.label} quota of {tenant.name} by "
                    f"{current + asked - limit:g}{unit}: {limit:g}{unit} allowed, "
                    f"{current:g}{unit} in use, {asked:g}{unit} asked.",
                    field=field,
                )


# --- placement ----------------------------------------------------------------------------


def _snapshot() -> Snapshot:
    """The free inventory less what compositions hold but the console tables do not show as
    taken yet: unbound GiB slices, host cores and memory; plus who holds which switch and
    enclosure (critical isolation)."""
    snapshot = build_snapshot()
    active = (
        Allocation.objects.filter(released_at__isnull=True)
        .select_related("device", "composition")
        .only(
            "gib",
            "device__id",
            "device__attributes",
            "device__enclosure_id",
            "composition__tenant_id",
            "composition__spec",
        )
    )
    slices: dict[str, int] = defaultdict(int)
    bound_gib: dict[str, int] = {}
    holders: dict[str, set[str]] = defaultdict(set)
    critical: dict[str, str] = {}
    for allocation in active:
        device = allocation.device
        key = f"device:{device.pk}"
        if allocation.gib:
            slices[key] += allocation.gib
            bound_gib[key] = int((device.attributes or {}).get("bound_gib", 0))
        enclosure = f"enclosure:{device.enclosure_id}"
        info = snapshot.enclosures.get(enclosure)
        tenant = str(allocation.composition.tenant_id)
        for domain in (enclosure, *(info.switches if info else ())):
            holders[domain].add(tenant)
            if (allocation.composition.spec or {}).get("critical"):
                critical[domain] = tenant
    # Slices the manager reports bound are already out of the snapshot's free GiB.
    memory = {k: max(0, v - bound_gib.get(k, 0)) for k, v in slices.items()}
    cores: dict[str, int] = defaultdict(int)
    host_memory: dict[str, int] = defaultdict(int)
    for host_id, spec in Composition.objects.filter(
        state__in=ACTIVE_COMPOSITION_STATES, host__isnull=False
    ).values_list("host_id", "spec"):
        cores[f"host:{host_id}"] += int((spec or {}).get("cores") or 0)
        host_memory[f"host:{host_id}"] += int((spec or {}).get("host_memory_gib") or 0)
    if memory or cores or host_memory:
        snapshot = snapshot.taking(memory_gib=memory, cores=cores, host_memory_gib=host_memory)
    if holders:
        snapshot = replace(
            snapshot, holders={k: frozenset(v) for k, v in holders.items()}, critical=critical
        )
    return snapshot


def _place(tenant: Tenant, spec: Mapping[str, Any], host: Host | None) -> Placement | Rejection:
    request = spec_to_request(spec, host=f"host:{host.pk}" if host else None, tenant=str(tenant.pk))
    snapshot = _snapshot()
    if host is not None and request.host not in snapshot.hosts:
        return Rejection("no_capacity", f"Host {host.name} is not usable now (not active).")
    outcome = place(request, snapshot)
    if isinstance(outcome, Rejection) and outcome.code == "invalid":
        raise SpecError(outcome.message, field="spec")
    return outcome


def _pick_dict(pick: DevicePick) -> dict[str, Any]:
    return {
        "device": pick.device,
        "name": pick.name,
        "kind": pick.kind,
        "enclosure": pick.enclosure,
        "latency_ns": pick.latency_ns,
        "bottleneck_gbps": pick.bottleneck_gbps,
        "gib": pick.gib,
    }


def placement_as_dict(outcome: Placement | Rejection) -> dict[str, Any]:
    """A plan or a rejection as JSON (stored on the composition, shown by pages and API)."""
    funnel = [list(step) for step in outcome.funnel]
    if isinstance(outcome, Rejection):
        return {
            "ok": False,
            "code": outcome.code,
            "message": outcome.message,
            "funnel": funnel,
            "nearest": outcome.nearest,
        }
    return {
        "ok": True,
        "host": outcome.host,
        "host_name": outcome.host_name,
        "devices": [_pick_dict(p) for p in outcome.devices],
        "memory": [_pick_dict(p) for p in outcome.memory],
        "score": outcome.score,
        "explanation": list(outcome.explanation),
        "funnel": funnel,
    }


def _pk(ref: str) -> int:
    """The primary key in a snapshot id such as "device:12"."""
    return int(ref.rsplit(":", 1)[1])


def composition_preview(*, tenant: Tenant, spec: Mapping[str, Any]) -> Placement | Rejection:
    """Dry run: the plan (or the rejection) a request would get now. Writes nothing.

    Raises SpecError / QuotaExceeded (with `field`) for bad input or a request over quota.
    """
    clean = spec_normalise(spec)
    host = _check_against_fabric(clean)
    _quota_check(tenant, clean)
    return _place(tenant, clean, host)


# --- request -------------------------------------------------------------------------------


def composition_request(
    *,
    tenant: Tenant,
    requested_by: Any,
    spec: Mapping[str, Any] | None,
    name: str,
    template: Template | None = None,
    idempotency_key: str | None = None,
    remote_addr: str | None = None,
) -> Composition:
    """Record, place and claim a composition, and queue its compose job.

    `spec` overrides the template's spec key by key (None: the template as is). Returns the
    composition: PLACING with its devices claimed and a COMPOSE job queued after commit, or
    REJECTED with the reason and the funnel when nothing fits now. With an
    `idempotency_key` already used by this tenant, returns that first composition and does
    nothing else. Raises SpecError (bad input, `field` set) or QuotaExceeded, writing
    nothing.
    """
    key = (idempotency_key or "").strip()
    if len(key) > 200:
        raise SpecError("The idempotency key is at most 200 characters.", field="idempotency_key")
    if key:
        first = Composition.objects.filter(tenant=tenant, idempotency_key=key).first()
        if first is not None:
            return first
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise SpecError("Give the composition a name of 1 to 100 characters.", field="name")
    if template is not None and not template.is_active:
        raise SpecError(f"Template {template.name} is not available.", field="template")
    raw = {**(template.spec if template else {}), **(spec or {})}
    clean = spec_normalise(raw)
    host = _check_against_fabric(clean)
    try:
        with transaction.atomic():
            # One request per tenant at a time: quotas are checked against settled holdings.
            Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
            if key:
                first = Composition.objects.filter(tenant=tenant, idempotency_key=key).first()
                if first is not None:
                    return first
            _quota_check(tenant, clean)
            composition = _create(tenant, requested_by, name, template, clean, key, remote_addr)
            _place_and_claim(composition, clean, host, requested_by, remote_addr)
    except IntegrityError:
        if key:  # a concurrent retry with the same key won the race
            first = Composition.objects.filter(tenant=tenant, idempotency_key=key).first()
            if first is not None:
                return first
        raise
    return composition


def _create(
    tenant: Tenant,
    requested_by: Any,
    name: str,
    template: Template | None,
    spec: dict[str, Any],
    key: str,
    remote_addr: str | None,
) -> Composition:
    composition = Composition(
        tenant=tenant,
        name=name,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        template=template,
        spec=spec,
        state=CompositionState.REQUESTED,
        idempotency_key=key,
    )
    composition.full_clean(validate_constraints=False)
    composition.save()
    StateChange.objects.create(
        composition=composition,
        from_state="",
        to_state=CompositionState.REQUESTED,
        reason=f"Requested{f' from template {template.name}' if template else ''}",
        actor=composition.requested_by,
        remote_addr=remote_addr or None,
    )
    return composition


def _place_and_claim(
    composition: Composition,
    spec: dict[str, Any],
    host: Host | None,
    actor: Any,
    remote_addr: str | None,
) -> None:
    audit = {"actor": actor, "remote_addr": remote_addr}
    composition_transition(composition, CompositionState.PLACING, reason="Placing", **audit)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PLACEMENT_LOCK_KEY])
    for attempt in (1, 2):
        outcome = _place(composition.tenant, spec, host)
        if isinstance(outcome, Rejection):
            composition_transition(
                composition,
                CompositionState.REJECTED,
                reason=outcome.message,
                placement=placement_as_dict(outcome),
                failure_reason=outcome.message,
                **audit,
            )
            logger.info("composition %s rejected: %s", composition.pk, outcome.code)
            return
        placed_host = Host.objects.get(pk=_pk(outcome.host))
        Composition.objects.filter(pk=composition.pk).update(host=placed_host)
        composition.host = placed_host
        claims = [Claim(_pk(p.device)) for p in outcome.devices] + [
            Claim(_pk(p.device), p.gib) for p in outcome.memory
        ]
        try:
            allocations_claim(composition=composition, claims=claims, host=placed_host, actor=actor)
        except ClaimConflict as exc:
            logger.info("composition %s claim %s lost: %s", composition.pk, attempt, exc)
            if attempt == 2:
                message = "The devices chosen were taken by concurrent requests twice; try again."
                composition_transition(
                    composition,
                    CompositionState.REJECTED,
                    reason=message,
                    host=None,
                    placement={**placement_as_dict(outcome), "ok": False, "code": "conflict"},
                    failure_reason=message,
                    **audit,
                )
            continue
        Composition.objects.filter(pk=composition.pk).update(
            placement=placement_as_dict(outcome), score=outcome.score
        )
        composition.placement, composition.score = placement_as_dict(outcome), outcome.score
        job = _job_create(composition, JobKind.COMPOSE, actor)
        transaction.on_commit(partial(_enqueue_compose, job, composition))
        logger.info(
            "composition %s placed on %s, %s claim(s), job %s",
            composition.pk,
            placed_host.name,
            len(claims),
            job.pk,
        )
        return


def _job_create(composition: Composition, kind: JobKind, requested_by: Any) -> Job:
    job = Job(
        kind=kind,
        status=JobStatus.QUEUED,
        tenant=composition.tenant,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        target_type=COMPOSITION_TARGET,
        target_id=composition.pk,
        target_label=composition.name[:200],
        params={"composition_id": composition.pk},
        message="Waiting for a worker",
    )
    job.full_clean()
    job.save()
    return job


def _enqueue_compose(job: Job, composition: Composition) -> None:
    """Enqueue the compose job; if the broker refuses it, give the reservation back."""
    from composer.services.composition_jobs import composition_rollback
    from composer.tasks import composition_compose_task

    _enqueue(job, composition_compose_task)
    job.refresh_from_db(fields=["status", "error", "started_at"])
    if job.status == JobStatus.FAILED and job.started_at is None:
        composition.refresh_from_db()
        composition_rollback(
            composition=composition,
            driver=None,
            reason=f"The compose job could not be queued: {job.error}",
            source=f"compose job {job.pk}",
        )


# --- decompose -----------------------------------------------------------------------------


def composition_decompose(
    *, composition: Composition, actor: Any, remote_addr: str | None = None
) -> Job:
    """Queue the decompose job of a READY composition and return it.

    Also accepted: DECOMPOSING (returns the pending job, or queues a new one after a failed
    run) and FAILED with allocations left recorded by a rollback that could not unbind.
    Raises InvalidTransition (field "state") while the composition is still being placed
    or bound, or when there is nothing to decompose.
    """
    from composer.tasks import composition_decompose_task

    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        state = CompositionState(locked.state)
        if state in (
            CompositionState.REQUESTED,
            CompositionState.PLACING,
            CompositionState.BINDING,
        ):
            raise InvalidTransition(
                f"Composition {locked.name} is still {state.label.lower()}; decompose it once "
                "it is ready (or it fails and rolls back by itself).",
                field="state",
            )
        has_allocations = locked.allocations.filter(released_at__isnull=True).exists()
        if state == CompositionState.DECOMPOSING:
            pending = Job.objects.filter(
                kind=JobKind.DECOMPOSE,
                target_type=COMPOSITION_TARGET,
                target_id=locked.pk,
                status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
            ).first()
            if pending is not None:
                return pending
        elif state == CompositionState.READY or (
            state == CompositionState.FAILED and has_allocations
        ):
            composition_transition(
                locked,
                CompositionState.DECOMPOSING,
                reason="Decompose requested",
                actor=actor,
                remote_addr=remote_addr,
            )
        else:
            raise InvalidTransition(
                f"Composition {locked.name} is {state.label.lower()}; there is nothing to "
                "decompose.",
                field="state",
            )
        job = _job_create(locked, JobKind.DECOMPOSE, actor)
        transaction.on_commit(lambda: _enqueue(job, composition_decompose_task))
    composition.state = locked.state
    logger.info("composition %s decompose queued as job %s", composition.pk, job.pk)
    return job
