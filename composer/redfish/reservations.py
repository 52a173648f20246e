"""CompositionReservations: what a `PreviewReserve` holds, until it is applied or lapses.

A reservation is a Composer hold (`composer.services.holds`): the plan's blocks are claimed
as a request's are (same checks, quotas, placement lock, audit), nothing is bound, and it
lapses `Oem.Composer.ReservationSeconds` after it was made (`DEFAULT_S` when not given;
beat's sweep gives the blocks back). Its id is the held composition's.

- `GET /CompositionService/CompositionReservations[/{id}]`: the holds the caller may
  see (members: their tenants'; others 404), with the blocks held and when it lapses;
- `Compose` with `RequestType` `Apply` and `ReservationId`: composes it (202 and the
  compose job's task monitor);
- `DELETE .../{id}`: lets it go (204); `If-Match` is honoured.
"""

from __future__ import annotations

from typing import Any

from composer.choices import CompositionState
from composer.models import Composition, Tenant
from composer.redfish.answers import Answer
from composer.redfish.caller import Call, Caller
from composer.redfish.compose_request import SystemRequest
from composer.redfish.compose_rules import (
    blocks_free,
    refused_as_redfish,
    rejection_refusal,
    rejection_words,
)
from composer.redfish.composed import HOST_BLOCK, block_path, block_path_of, row_id
from composer.redfish.inventory import per_request, per_request_kept
from composer.redfish.paths import RESERVATIONS
from composer.redfish.routes import Route
from composer.redfish.tasks import task_accepted
from composer.selectors.holds import composition_holds_for_user
from composer.services.holds import (
    composition_hold,
    composition_hold_apply,
    composition_hold_release,
    hold_words,
)
from fabric.redfish_render.build import collection, refs, resource
from fabric.redfish_render.errors import refuse

__all__ = ["DEFAULT_S", "ROUTES", "reservation_apply", "reservation_path", "reserve"]

DEFAULT_S = 600  # ten minutes: long enough to look a plan over, short enough not to hoard


def reservation_path(composition: Composition) -> str:
    return f"{RESERVATIONS}/{composition.pk}"


def reserve(call: Call, request: SystemRequest, tenant: Tenant) -> Composition:
    """Hold what `request` would compose (PreviewReserve); the held composition, or the
    Redfish refusal."""
    blocks_free(request)
    seconds = request.reservation_s if request.reservation_s is not None else DEFAULT_S
    request.pointers["ttl_s"] = "#/Oem/Composer/ReservationSeconds"
    with refused_as_redfish(request):
        held = composition_hold(
            tenant=tenant,
            requested_by=call.caller.user,
            spec=request.spec,
            name=request.name,
            ttl_s=seconds,
            remote_addr=call.caller.remote_addr,
        )
    if held.state != CompositionState.HELD:
        words = rejection_words(held.placement, operator=call.caller.operator)
        raise rejection_refusal(words, request)
    return held


def _holds(caller: Caller) -> Any:
    """The reservations the caller sees: every one for an operator, else its active
    tenants' (the scope of every Redfish resource: `Caller.tenant_ids`)."""
    held = composition_holds_for_user(user=caller.user)
    return held if caller.operator else held.filter(tenant_id__in=caller.tenant_ids)


def _listed(caller: Caller) -> dict[int, Composition]:
    return {held.pk: held for held in _holds(caller)}


def _reservation(call: Call, key: Any) -> Composition:
    text = str(key) if isinstance(key, str | int) else ""
    pk = row_id(text)
    listed: dict[int, Composition] | None = per_request_kept(call, "reservations")
    if listed is not None and pk in listed:
        return listed[pk]
    found = _holds(call.caller).filter(pk=pk).first() if pk is not None else None
    if found is None:
        raise refuse(
            404,
            f"There is no composition reservation {text}.",
            "Base.ResourceNotFound",
            "CompositionReservation",
            text,
        )
    return found


def _writable(call: Call, held: Composition) -> None:
    if not call.caller.writes_tenant(held.tenant_id):
        raise refuse(
            403,
            f"You have read-only access to {held.tenant.name}.",
            "Base.InsufficientPrivilege",
        )


def reservation_apply(call: Call, key: Any) -> Answer:
    """Compose a reservation (Apply with ReservationId): 202 and the compose task."""
    held = _reservation(call, key)
    _writable(call, held)
    with refused_as_redfish(None):
        job = composition_hold_apply(
            composition=held, actor=call.caller.user, remote_addr=call.caller.remote_addr
        )
    return task_accepted(job)


def reservation_list(call: Call) -> dict[str, Any]:
    members = [reservation_path(c) for c in per_request(call, "reservations", _listed).values()]
    return collection(RESERVATIONS, "CompositionReservation", "Composition reservations", members)


def reservation_body(held: Composition) -> dict[str, Any]:
    """A hold as a CompositionReservation: nothing in it changes until it is applied or
    let go, so its ETag holds."""
    blocks = [block_path(a.device) for a in held.allocations.all()]
    if held.host_id is not None:
        blocks.insert(0, block_path_of(HOST_BLOCK, held.host_id))
    blocks = list(dict.fromkeys(blocks))
    return resource(
        reservation_path(held),
        f"Reservation of {held.name}",
        "CompositionReservation",
        ReservationTime=held.created_at.isoformat(),
        Client=held.requested_by.get_username() if held.requested_by else "",
        ReservedResourceBlocks=refs(blocks),
        Manifest={
            "Expand": "None",
            "Stanzas": [
                {
                    "StanzaType": "ComposeSystem",
                    "StanzaId": str(held.pk),
                    "Request": {
                        "Name": held.name,
                        "Links": {"ResourceBlocks": refs(blocks)},
                    },
                }
            ],
        },
        Description=hold_words(held.hold_expires_at) if held.hold_expires_at else "Held",
    )


def reservation_get(call: Call) -> dict[str, Any]:
    return reservation_body(_reservation(call, call.params["reservation"]))


def reservation_delete(call: Call) -> Answer:
    """Let the hold go: its blocks are free again. 204."""
    held = _reservation(call, call.params["reservation"])
    _writable(call, held)
    with refused_as_redfish(None):
        composition_hold_release(
            composition=held, actor=call.caller.user, remote_addr=call.caller.remote_addr
        )
    return Answer(204)


ROUTES = [
    Route(RESERVATIONS, get=reservation_list),
    Route(f"{RESERVATIONS}/{{reservation}}", get=reservation_get, delete=reservation_delete),
]
