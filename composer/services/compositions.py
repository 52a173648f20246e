"""Composition services: preview, request (validate, quota, place, claim, queue), decompose.

The request path writes once, in one transaction: the composition row and its audit
trail, the claimed allocations and the compose job, enqueued after commit. Bad input
(rule 4) raises a ComposerError subclass naming the field before anything is written; a
request the fabric cannot satisfy now is kept as a REJECTED composition with the reason
and the placement funnel. The placement itself (snapshot, engine, the plan as JSON) is in
`composer.services.composition_placement`, shared with the heal job.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from django.db import IntegrityError, connection, transaction

from composer.choices import (
    CompositionState,
    JobKind,
    JobStatus,
)
from composer.errors import ClaimConflict, InvalidTransition, SpecError
from composer.models import Composition, Job, StateChange, Template, Tenant
from composer.placement.request import Placement, Rejection
from composer.services.allocations import allocations_claim
from composer.services.composition_checks import (
    composition_check_fabric,
    composition_check_name_free,
    composition_check_quotas,
    composition_name_clean,
)
from composer.services.composition_pins import Pin, pins_resolve
from composer.services.composition_placement import (
    PLACEMENT_LOCK_KEY,
    composition_place,
    placement_as_dict,
    placement_claims,
    snapshot_pk,
)
from composer.services.dispatch import WAITING_FOR_WORKER, job_enqueue
from composer.services.hold_lapse import holds_lapsed_release
from composer.specs import spec_normalise
from composer.states import composition_transition
from fabric.models import Host
from fabric.permissions import is_operator
from fabric.validators import text_problem

logger = logging.getLogger(__name__)

__all__ = [
    "COMPOSITION_TARGET",
    "composition_decompose",
    "composition_job_create",
    "composition_preview",
    "composition_request",
    "placement_as_dict",
]

COMPOSITION_TARGET = "composition"
LAPSE_SOURCE = "hold lapse before placing"  # the audit's source of holds a request releases


# --- preview -------------------------------------------------------------------------------


def composition_preview(*, tenant: Tenant, spec: Mapping[str, Any]) -> Placement | Rejection:
    """Dry run: the plan (or the rejection) a request would get now. Writes nothing.

    Raises SpecError / QuotaExceeded (with `field`) for bad input or a request over quota.
    Holds past their time are released first (as a request does): the plan must not count
    devices nobody holds any more.
    """
    clean = spec_normalise(spec)
    host = composition_check_fabric(spec=clean)
    pins = pins_resolve(spec=clean)
    holds_lapsed_release(source=LAPSE_SOURCE)
    composition_check_quotas(tenant=tenant, spec=clean, pins=pins)
    return composition_place(tenant, clean, host, pins)


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
    hold_until: datetime | None = None,
    override_bookings: str | None = None,
) -> Composition:
    """Record, place and claim a composition, and queue its compose job (with `hold_until`,
    keep it HELD until then instead: `composer.services.holds.composition_hold`).

    Devices that booked windows hold from now on are left out (rule 7), unless an operator
    overrides with a reason (`override_bookings`), which the PLACING state change records;
    anyone else gets a SpecError on `override_bookings`.

    `spec` overrides the template's spec key by key (None: the template as is). Returns the
    composition: PLACING with its devices claimed and a COMPOSE job queued after commit, or
    REJECTED with the reason and the funnel when nothing fits now. With an
    `idempotency_key` already used by this tenant, returns that first composition and does
    nothing else. Raises SpecError (bad input, `field` set), NameTaken (another live
    composition of the tenant has the name) or QuotaExceeded, writing nothing.
    """
    override = _override_reason(override_bookings, requested_by)
    key = (idempotency_key or "").strip()
    if len(key) > 200:
        raise SpecError("The idempotency key is at most 200 characters.", field="idempotency_key")
    if key:
        first = Composition.objects.filter(tenant=tenant, idempotency_key=key).first()
        if first is not None:
            return first
    name = composition_name_clean(name)
    if template is not None and not template.is_active:
        raise SpecError(f"Template {template.name} is not available.", field="template")
    raw = {**(template.spec if template else {}), **(spec or {})}
    clean = spec_normalise(raw)
    host = composition_check_fabric(spec=clean)
    pins = pins_resolve(spec=clean)
    # A lapsed hold's devices (and quota) are free to this request whether or not beat's
    # sweep has run: released now, each in its own transaction, before the checks.
    holds_lapsed_release(source=LAPSE_SOURCE)
    try:
        with transaction.atomic():
            # One request per tenant at a time: quotas are checked against settled holdings.
            Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
            if key:
                first = Composition.objects.filter(tenant=tenant, idempotency_key=key).first()
                if first is not None:
                    return first
            composition_check_name_free(tenant=tenant, name=name)
            composition_check_quotas(tenant=tenant, spec=clean, pins=pins)
            composition = _create(tenant, requested_by, name, template, clean, key, remote_addr)
            _place_and_claim(
                composition, clean, host, pins, requested_by, remote_addr, hold_until, override
            )
    except IntegrityError:
        if key:  # a concurrent retry with the same key won the race
            first = Composition.objects.filter(tenant=tenant, idempotency_key=key).first()
            if first is not None:
                return first
        # Another request took the name between the check and the insert (the unique index).
        composition_check_name_free(tenant=tenant, name=name)
        raise
    return composition


def _override_reason(reason: str | None, actor: Any) -> str | None:
    """The reason of an override of booked capacity, operators only and never empty."""
    if reason is None:
        return None
    reason = reason.strip()
    if not is_operator(actor):
        raise SpecError(
            "Only an operator may give a composition capacity that is booked.",
            field="override_bookings",
        )
    if not reason:
        raise SpecError(
            "Say why booked capacity may be taken (it is recorded).", field="override_bookings"
        )
    if len(reason) > 300:
        raise SpecError("The reason is at most 300 characters.", field="override_bookings")
    return reason


def _create(
    tenant: Tenant,
    requested_by: Any,
    name: str,
    template: Template | None,
    spec: dict[str, Any],
    key: str,
    remote_addr: str | None,
) -> Composition:
    problem = text_problem(name)
    if problem is not None:
        raise SpecError(problem, field="name")
    composition = Composition(
        tenant=tenant,
        name=name,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        template=template,
        spec=spec,
        state=CompositionState.REQUESTED,
        idempotency_key=key,
    )
    # The tenant (locked by the caller), the user and the template are rows in hand:
    # validating those keys would only read each of them again.
    composition.full_clean(
        exclude=["tenant", "requested_by", "template"], validate_constraints=False
    )
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
    pins: Sequence[Pin],
    actor: Any,
    remote_addr: str | None,
    hold_until: datetime | None,
    override: str | None = None,
) -> None:
    audit = {"actor": actor, "remote_addr": remote_addr}
    reason = "Placing" if override is None else f"Placing over booked capacity: {override}"
    composition_transition(composition, CompositionState.PLACING, reason=reason, **audit)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PLACEMENT_LOCK_KEY])
    for attempt in (1, 2):
        outcome = composition_place(
            composition.tenant, spec, host, pins, honour_bookings=override is None
        )
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
        # The host the request named is a row in hand already; any other is read once.
        placed_host = (
            host
            if host is not None and host.pk == snapshot_pk(outcome.host)
            else Host.objects.get(pk=snapshot_pk(outcome.host))
        )
        claims = placement_claims(outcome)
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
        # The host is written with the plan, once the claim holds: one UPDATE, and a lost
        # claim leaves no host behind.
        Composition.objects.filter(pk=composition.pk).update(
            host=placed_host, placement=placement_as_dict(outcome), score=outcome.score
        )
        composition.host = placed_host
        composition.placement, composition.score = placement_as_dict(outcome), outcome.score
        if hold_until is not None:
            composition_transition(
                composition,
                CompositionState.HELD,
                reason=f"Held until {hold_until:%Y-%m-%d %H:%M:%S} UTC",
                hold_expires_at=hold_until,
                **audit,
            )
            return
        job = composition_job_create(composition, JobKind.COMPOSE, actor)
        transaction.on_commit(partial(job_enqueue, job))
        logger.info(
            "composition %s placed on %s, %s claim(s), job %s",
            composition.pk,
            placed_host.name,
            len(claims),
            job.pk,
        )
        return


def composition_job_create(composition: Composition, kind: JobKind, requested_by: Any) -> Job:
    """The QUEUED job of `kind` for `composition` (the caller enqueues it after commit)."""
    job = Job(
        kind=kind,
        status=JobStatus.QUEUED,
        tenant=composition.tenant,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        target_type=COMPOSITION_TARGET,
        target_id=composition.pk,
        target_label=composition.name[:200],
        params={"composition_id": composition.pk},
        message=WAITING_FOR_WORKER,
    )
    job.full_clean(exclude=["tenant", "requested_by"])  # rows in hand, as in _create
    job.save()
    return job


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
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        state = CompositionState(locked.state)
        if state in (
            CompositionState.REQUESTED,
            CompositionState.PLACING,
            CompositionState.BINDING,
            CompositionState.HEALING,
            CompositionState.RESIZING,
        ):
            raise InvalidTransition(
                f"Composition {locked.name} is still {state.label.lower()}; decompose it once "
                "it is ready or degraded (or it fails and rolls back by itself).",
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
        elif state in (CompositionState.READY, CompositionState.DEGRADED) or (
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
                f"Composition {locked.name} is held, not composed: release the hold instead "
                '("Release hold" on its page), or apply it first ("Apply now").'
                if state == CompositionState.HELD
                else f"Composition {locked.name} is {state.label.lower()}; there is nothing to "
                "decompose.",
                field="state",
            )
        job = composition_job_create(locked, JobKind.DECOMPOSE, actor)
        transaction.on_commit(partial(job_enqueue, job))
    composition.state = locked.state
    logger.info("composition %s decompose queued as job %s", composition.pk, job.pk)
    return job
