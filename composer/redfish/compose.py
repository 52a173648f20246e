"""The writes that compose: `POST /Systems`, `DELETE /Systems/{id}` and the
`CompositionService.Compose` action.

Each goes through the very services the REST API calls (`composer.api.compositions` is
the model): the tenant is resolved, quotas checked, the request placed and claimed under
the placement lock, audited, its job queued, its events sent; so a Redfish composition is
an ordinary Composer composition (self-heal included, with `Oem.Composer.SelfHeal`).

- `POST /Systems` (specific with `Links.ResourceBlocks`, constrained with
  `@Redfish.RequestedCount` and property constraints: `compose_request`) answers 202 with
  the compose job's Task and its monitor in `Location`; the monitor answers 201 and the
  system once it is ready.
- `DELETE /Systems/{id}` queues the decompose job: 202 and its monitor.
- `Compose` with a manifest of one `ComposeSystem` stanza: `Preview` answers the plan and
  its explanation (nothing is written), `PreviewReserve` holds the plan's blocks for
  `Oem.Composer.ReservationSeconds` (a `CompositionReservation`: `reservations`), `Apply`
  composes as `POST /Systems` does, or applies a reservation named by `ReservationId`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from composer.api.serializers import plan_public
from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job, Tenant
from composer.placement.request import Rejection
from composer.redfish import reservations
from composer.redfish.answers import Answer
from composer.redfish.caller import Call
from composer.redfish.compose_request import SystemRequest, system_request
from composer.redfish.compose_rules import (
    blocks_free,
    compose_tenant,
    refused_as_redfish,
    rejection_refusal,
    rejection_words,
    within,
)
from composer.redfish.composed import HOST_BLOCK, block_path_of
from composer.redfish.paths import COMPOSE_ACTION, SYSTEMS
from composer.redfish.routes import Route
from composer.redfish.systems import system_of
from composer.redfish.tasks import task_accepted
from composer.services.composition_placement import snapshot_pk
from composer.services.compositions import (
    COMPOSITION_TARGET,
    composition_decompose,
    composition_preview,
    composition_request,
    placement_as_dict,
)
from fabric.redfish_render.errors import refuse

logger = logging.getLogger(__name__)

__all__ = ["ROUTES", "compose_response", "plan_blocks"]

ACTION = "CompositionService.Compose"
REQUEST_TYPES = ("Preview", "PreviewReserve", "Apply")
ACTION_PARAMETERS = frozenset({"RequestFormat", "RequestType", "Manifest", "ReservationId"})
STANZA = "#/Manifest/Stanzas/0/Request"


def _remote(call: Call) -> str | None:
    return call.caller.remote_addr


def compose(call: Call, request: SystemRequest, tenant: Tenant) -> Composition:
    """Request the composition (placed and claimed, its compose job queued), or refuse.

    With an `Idempotency-Key` header the tenant already used, the first composition comes
    back and nothing else is done (as through the REST API): a client that retries a
    POST whose answer it lost gets the first task, not a second system.
    """
    key = call.request.headers.get("Idempotency-Key") if call.request is not None else None
    if key:
        first = Composition.objects.filter(tenant=tenant, idempotency_key=key.strip()).first()
        if first is not None:
            return first
    blocks_free(request)
    with refused_as_redfish(request):
        composition = composition_request(
            tenant=tenant,
            requested_by=call.caller.user,
            spec=request.spec,
            name=request.name,
            idempotency_key=key,
            remote_addr=_remote(call),
        )
    if composition.state == CompositionState.REJECTED:
        words = rejection_words(composition.placement, operator=call.caller.operator)
        raise rejection_refusal(words, request)
    logger.info(
        "composition %s requested via redfish by user_id=%s", composition.pk, call.caller.user.pk
    )
    return composition


def composed_job(composition: Composition) -> Job:
    """The compose job a request (or an applied hold) queued."""
    return (
        Job.objects.filter(
            kind=JobKind.COMPOSE, target_type=COMPOSITION_TARGET, target_id=composition.pk
        )
        .order_by("-pk")
        .first()
    ) or _no_job(composition)


def _no_job(composition: Composition) -> Job:
    raise refuse(409, f"Composition {composition.name} has no compose job.", "Base.ResourceInUse")


def systems_post(call: Call) -> Answer:
    """POST /Systems: compose a system; 202 with the task that composes it."""
    request = system_request(call.body, call.caller)
    tenant = compose_tenant(call.caller, request.tenant, write=True)
    return task_accepted(composed_job(compose(call, request, tenant)))


def system_delete(call: Call) -> Answer:
    """DELETE /Systems/{id}: decompose; 202 with the task that does it."""
    composition = system_of(call)
    if not call.caller.writes_tenant(composition.tenant_id):
        raise refuse(
            403,
            f"You have read-only access to {composition.tenant.name}.",
            "Base.InsufficientPrivilege",
        )
    with refused_as_redfish(None):
        job = composition_decompose(
            composition=composition, actor=call.caller.user, remote_addr=_remote(call)
        )
    return task_accepted(job)


# -- the Compose action -------------------------------------------------------------------


def _action_error(status: int, text: str, name: str, *args: object, at: str) -> Any:
    return refuse(status, text, name, *args, properties=(at,))


def _stanza(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one ComposeSystem stanza of the manifest, and its Request."""
    manifest = body.get("Manifest")
    if not isinstance(manifest, dict):
        raise _action_error(
            400,
            "Compose takes a Manifest with one ComposeSystem stanza.",
            "Base.ActionParameterMissing",
            ACTION,
            "Manifest",
            at="#/Manifest",
        )
    stanzas = manifest.get("Stanzas")
    if not isinstance(stanzas, list) or len(stanzas) != 1 or not isinstance(stanzas[0], dict):
        raise _action_error(
            400,
            "The manifest takes exactly one stanza: one system is composed per request.",
            "Base.ActionParameterValueError",
            "Manifest",
            ACTION,
            at="#/Manifest/Stanzas",
        )
    stanza = stanzas[0]
    if stanza.get("StanzaType") != "ComposeSystem":
        raise _action_error(
            400,
            f"StanzaType must be ComposeSystem (got {stanza.get('StanzaType')!r}).",
            "Base.PropertyValueNotInList",
            stanza.get("StanzaType"),
            "StanzaType",
            at="#/Manifest/Stanzas/0/StanzaType",
        )
    request = stanza.get("Request")
    if not isinstance(request, dict):
        raise _action_error(
            400,
            "The ComposeSystem stanza needs a Request: the system to compose.",
            "Base.PropertyMissing",
            "Request",
            at="#/Manifest/Stanzas/0/Request",
        )
    return stanza, request


def plan_blocks(plan: dict[str, Any]) -> list[dict[str, str]]:
    """The blocks a plan takes: its host, then its devices and memory."""
    if not plan.get("ok"):
        return []
    paths = [block_path_of(HOST_BLOCK, snapshot_pk(str(plan["host"])))]
    for pick in [*plan.get("devices", []), *plan.get("memory", [])]:
        paths.append(block_path_of(str(pick["kind"]), snapshot_pk(str(pick["device"]))))
    return [{"@odata.id": path} for path in dict.fromkeys(paths)]


def compose_response(
    request_type: str, stanza: dict[str, Any], response: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """The Compose action's answer: the manifest with the stanza's Response filled in."""
    answered = {
        "StanzaType": "ComposeSystem",
        "StanzaId": str(stanza.get("StanzaId") or "1"),
        "Request": stanza.get("Request", {}),
        "Response": response,
    }
    return {
        "RequestFormat": "Manifest",
        "RequestType": request_type,
        "Manifest": {"Expand": "None", "Stanzas": [answered]},
        **extra,
    }


def planned(plan: dict[str, Any], name: str, call: Call) -> dict[str, Any]:
    """A stanza's Response: the system a plan would make, its blocks and the plan."""
    return {
        "Name": name,
        "SystemType": "Composed",
        "Links": {"ResourceBlocks": plan_blocks(plan)},
        "Oem": {"Composer": {"Plan": plan_public(plan, operator=call.caller.operator)}},
    }


def compose_action(call: Call) -> Answer:
    """POST the Compose action: Preview, PreviewReserve or Apply."""
    body = call.body
    for key in body:
        if key not in ACTION_PARAMETERS and "@" not in key:
            raise _action_error(
                400,
                f"Compose takes {', '.join(sorted(ACTION_PARAMETERS))}; not {key}.",
                "Base.ActionParameterUnknown",
                ACTION,
                key,
                at=f"#/{key}",
            )
    kind = body.get("RequestType")
    if kind is None:
        raise _action_error(
            400,
            "RequestType is required: Preview, PreviewReserve or Apply.",
            "Base.ActionParameterMissing",
            ACTION,
            "RequestType",
            at="#/RequestType",
        )
    if kind not in REQUEST_TYPES:
        raise _action_error(
            400,
            f"RequestType must be Preview, PreviewReserve or Apply (got {kind!r}).",
            "Base.ActionParameterValueNotInList",
            kind,
            "RequestType",
            ACTION,
            at="#/RequestType",
        )
    if body.get("RequestFormat", "Manifest") != "Manifest":
        raise _action_error(
            400,
            "RequestFormat must be Manifest.",
            "Base.ActionParameterValueNotInList",
            body.get("RequestFormat"),
            "RequestFormat",
            ACTION,
            at="#/RequestFormat",
        )
    if kind == "Apply" and body.get("ReservationId") is not None:
        reservation = body["ReservationId"]
        if not isinstance(reservation, str | int) or isinstance(reservation, bool):
            raise refuse(
                400,
                "ReservationId names a reservation by its id (a string).",
                "Base.ActionParameterValueTypeError",
                json.dumps(reservation)[:100],
                "ReservationId",
                ACTION,
                properties=("#/ReservationId",),
            )
        return reservations.reservation_apply(call, reservation)
    stanza, raw = _stanza(body)
    with within(STANZA):
        request = system_request(raw, call.caller)
        tenant = compose_tenant(call.caller, request.tenant, write=kind != "Preview")
        if kind == "Preview":
            return Answer(200, compose_response(kind, stanza, _preview(call, request, tenant)))
        if kind == "PreviewReserve":
            held = reservations.reserve(call, request, tenant)
            response = planned(held.placement, held.name, call)
            answer = compose_response(kind, stanza, response, ReservationId=str(held.pk))
            return Answer(200, answer, {"Location": reservations.reservation_path(held)})
        return task_accepted(composed_job(compose(call, request, tenant)))


def _preview(call: Call, request: SystemRequest, tenant: Tenant) -> dict[str, Any]:
    blocks_free(request)
    with refused_as_redfish(request):
        outcome = composition_preview(tenant=tenant, spec=request.spec)
    plan = placement_as_dict(outcome)
    if isinstance(outcome, Rejection):
        raise rejection_refusal(rejection_words(plan, operator=call.caller.operator), request)
    return planned(plan, request.name, call)


ROUTES = [
    Route(SYSTEMS, post=systems_post),
    Route(f"{SYSTEMS}/{{system}}", delete=system_delete),
    Route(COMPOSE_ACTION, post=compose_action),
]
