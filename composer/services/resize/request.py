"""The resize preview and request (see the package docstring)."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.db import connection, transaction

from composer.choices import CompositionState, JobKind
from composer.errors import ClaimConflict, InvalidTransition
from composer.models import Allocation, Composition, Job, Tenant
from composer.placement.request import Rejection
from composer.services.allocations import allocations_claim
from composer.services.composition_placement import (
    PLACEMENT_LOCK_KEY,
    placement_claims,
)
from composer.services.compositions import LAPSE_SOURCE, composition_job_create
from composer.services.dispatch import job_enqueue
from composer.services.hold_lapse import holds_lapsed_release
from composer.services.resize.asks import (
    resize_check_fabric,
    resize_check_quotas,
    resize_normalise,
    resize_removals,
    spec_resized,
)
from composer.services.resize.common import (
    PHASE_ADDING,
    RESIZING_KEY,
    ResizeAsk,
    ResizeRejected,
)
from composer.services.resize.placing import (
    additions_place,
    removal_words,
    resize_plan_as_dict,
)
from composer.states import composition_transition
from fabric.kinds import label, plural, shares_per_device

logger = logging.getLogger(__name__)

__all__ = ["resize_preview", "resize_request"]


_HINTS = {
    CompositionState.DEGRADED: " Heal it first.",
    CompositionState.PLACING: " Wait until it is ready.",
    CompositionState.BINDING: " Wait until it is ready.",
    CompositionState.HEALING: " Wait until it is ready.",
    CompositionState.RESIZING: " Wait until its resize is done.",
}


def _ready(composition: Composition) -> None:
    """InvalidTransition (field "state", 409) unless `composition` is READY."""
    state = CompositionState(composition.state)
    if state != CompositionState.READY:
        hint = _HINTS.get(state, "")
        raise InvalidTransition(
            f"Composition {composition.name} is {state.label.lower()}; only a ready "
            f"composition can be resized.{hint}",
            field="state",
        )


def _asked_words(ask: ResizeAsk) -> str:
    """What is added, for the audit: "1 GPU (H100 PCIe 80GB), 256 GiB of CXL memory"."""
    parts = []
    for item in ask.items:
        model = f" ({item['model']})" if item["model"] else ""
        if item.get("share"):
            whole = shares_per_device(item["kind"])
            parts.append(f"a {item['share']}/{whole} share of a {label(item['kind'])}{model}")
        else:
            what = label(item["kind"]) if item["count"] == 1 else plural(item["kind"])
            parts.append(f"{item['count']} {what}{model}")
    if ask.memory_gib:
        parts.append(f"{ask.memory_gib:,} GiB of CXL memory")
    return ", ".join(parts)


def _checked(
    composition: Composition, add: Any, remove: Any
) -> tuple[ResizeAsk, list[Allocation], dict[str, Any]]:
    """The checks a preview and a request share, in the order a form shows them."""
    ask = resize_normalise(add=add, remove=remove)
    _ready(composition)
    resize_check_fabric(ask)
    removed = resize_removals(composition, ask)
    spec = spec_resized(composition.spec or {}, ask, removed)
    return ask, removed, spec


def resize_preview(*, composition: Composition, add: Any, remove: Any) -> dict[str, Any]:
    """Dry run: the plan a resize of `composition` would get now, as a stored plan
    (`resize_plan_as_dict`: what is added with the placement's explanation, what is
    removed, the request once resized; or the rejection with the nearest alternative).
    Holds nothing, writes nothing (holds past their time are released first, as a request
    does). Raises SpecError (bad input, naming the field), InvalidTransition (not READY) or
    QuotaExceeded."""
    composition = Composition.objects.select_related("tenant", "host").get(pk=composition.pk)
    ask, removed, spec = _checked(composition, add, remove)
    holds_lapsed_release(source=LAPSE_SOURCE)
    resize_check_quotas(tenant=composition.tenant, ask=ask, removed=removed)
    outcome = additions_place(composition, ask, removed) if ask.adds else None
    return resize_plan_as_dict(composition, outcome, removed, spec)


def resize_request(
    *,
    composition: Composition,
    add: Any,
    remove: Any,
    requested_by: Any,
    remote_addr: str | None = None,
    source: str = "",
) -> Job:
    """Resize READY `composition`: place and claim what `add` asks for on its host, then
    queue the RESIZE job that binds it and unbinds what `remove` names. Returns the job.

    In one transaction, under the composition's and its tenant's row locks and the
    placement lock: the checks, the claims (retried once on a lost race), the record of
    the resize on the composition (`placement["resizing"]`) and READY -> RESIZING, audited
    with `requested_by`, `remote_addr` and `source`; the job is enqueued after commit.
    Raises SpecError (bad input, naming the field), InvalidTransition (field "state": not
    READY), QuotaExceeded, or ResizeRejected (the additions do not fit now; its `plan`
    names why and the nearest alternative). Any of those writes nothing.
    """
    resize_normalise(add=add, remove=remove)  # bad input is refused before any lock
    holds_lapsed_release(source=LAPSE_SOURCE)
    user = requested_by if getattr(requested_by, "pk", None) else None
    with transaction.atomic():
        locked = (
            Composition.objects.select_for_update(of=("self",))
            .select_related("tenant", "host__manager")
            .get(pk=composition.pk)
        )
        ask, removed, spec = _checked(locked, add, remove)
        # One request per tenant at a time: quotas are checked against settled holdings.
        Tenant.objects.select_for_update().filter(pk=locked.tenant_id).first()
        resize_check_quotas(tenant=locked.tenant, ask=ask, removed=removed)
        created: list[Allocation] = []
        plan = resize_plan_as_dict(locked, None, removed, spec)
        if ask.adds:
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PLACEMENT_LOCK_KEY])
            created, plan = _claim(locked, ask, removed, spec, user)
        job = composition_job_create(locked, JobKind.RESIZE, user)
        record = {
            "job": job.pk,
            "phase": PHASE_ADDING,
            "add": [a.pk for a in created],
            "picks": [*plan["devices"], *plan["memory"]],
            "remove": [a.pk for a in removed],
            "removed": plan["remove"],
            "spec": spec,
            "explanation": plan["explanation"],
        }
        reason = "Resize requested: " + "; ".join(
            part
            for part in (
                f"add {_asked_words(ask)}" if ask.adds else "",
                f"remove {removal_words(removed)}" if removed else "",
            )
            if part
        )
        composition_transition(
            locked,
            CompositionState.RESIZING,
            reason=reason,
            actor=user,
            remote_addr=remote_addr,
            source=source,
            placement={**(locked.placement or {}), RESIZING_KEY: record},
            failure_reason="",
        )
        transaction.on_commit(partial(job_enqueue, job))
    composition.state, composition.placement = locked.state, locked.placement
    composition.failure_reason = ""
    logger.info(
        "composition %s: resize queued as job %s (%s claim(s), %s removal(s))",
        composition.pk,
        job.pk,
        len(created),
        len(removed),
    )
    return job


def _claim(
    composition: Composition,
    ask: ResizeAsk,
    removed: list[Allocation],
    spec: dict[str, Any],
    user: Any,
) -> tuple[list[Allocation], dict[str, Any]]:
    """Place the additions and claim them (inside the caller's transaction, under the
    placement lock); placed again once when a device was taken meanwhile. Raises
    ResizeRejected with the plan when nothing fits or the race is lost twice."""
    host = composition.host
    assert host is not None  # a ready composition is placed
    for attempt in (1, 2):
        outcome = additions_place(composition, ask, removed)
        plan = resize_plan_as_dict(composition, outcome, removed, spec)
        if isinstance(outcome, Rejection):
            raise ResizeRejected(outcome.message, plan=plan)
        try:
            created = allocations_claim(
                composition=composition,
                claims=placement_claims(outcome),
                host=host,
                actor=user,
            )
        except ClaimConflict as exc:
            logger.info("composition %s resize claim %s lost: %s", composition.pk, attempt, exc)
            continue
        return created, plan
    message = "The devices chosen were taken by concurrent requests twice; try again."
    raise ResizeRejected(
        message, plan={"ok": False, "code": "conflict", "message": message, "funnel": []}
    )
