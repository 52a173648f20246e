"""Who composes for whom through Redfish, and Composer's refusals told as Redfish errors.

The tenant of a request: a member composes for its tenant (with several, `Oem.Composer.
Tenant` names one); an operator names the tenant with `Oem.Composer.Tenant`, or acts for
the only active tenant when there is one. Read-only members may preview, never compose
(403 `InsufficientPrivilege`), as in the REST API.

A `ComposerError` names the spec field at fault; the request's pointers turn it into the
property the client sent (`RelatedProperties`), with the registry message that fits:
`PropertyValueNotInList` (an unknown model, policy or kind), `PropertyValueOutOfRange` (a
count, GiB or cores beyond what can be), `ResourceExhaustion` (over a quota),
`ResourceAlreadyExists` (the name is taken), `ResourceInUse` (a composition still being
composed); a request nothing fits now is `Composition.NoResourceMatch`, and one naming a
block that is taken `Composition.ResourceBlockInUse`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from composer.api.serializers import plan_public
from composer.errors import (
    ComposerError,
    InvalidTransition,
    NameTaken,
    QuotaExceeded,
    StaleState,
)
from composer.models import Allocation, Tenant
from composer.redfish.caller import Caller
from composer.redfish.compose_request import SystemRequest
from composer.redfish.composed import block_path
from composer.redfish.paths import SYSTEMS
from fabric.choices import DeviceState
from fabric.models import Device
from fabric.redfish_render.errors import RedfishError, refuse

__all__ = [
    "blocks_free",
    "compose_tenant",
    "composer_refusal",
    "refused_as_redfish",
    "rejection_refusal",
    "rejection_words",
    "within",
]

TENANT_POINTER = "#/Oem/Composer/Tenant"
# Spec fields whose bad values are a choice among known ones.
CHOICES = ("model", "kind", "policy")
RANGE_WORDS = ("at least", "at most", "holds", "largest", "No host has")


def compose_tenant(caller: Caller, slug: str | None, *, write: bool) -> Tenant:
    """The tenant a request composes for (see the module's docstring)."""
    if caller.operator:
        if slug:
            tenant = Tenant.objects.filter(slug=slug, is_active=True).first()
            if tenant is None:
                raise _no_tenant(slug)
            return tenant
        tenants = list(Tenant.objects.filter(is_active=True)[:2])
        if len(tenants) == 1:
            return tenants[0]
        raise refuse(
            400,
            "Operators name the tenant a system is composed for: Oem.Composer.Tenant, its slug.",
            "Base.PropertyMissing",
            "Oem/Composer/Tenant",
            properties=(TENANT_POINTER,),
        )
    memberships = caller.memberships
    if slug:
        chosen = [m for m in memberships if m.tenant.slug == slug]
        if not chosen:
            raise _no_tenant(slug)
    elif len(memberships) > 1:
        slugs = ", ".join(m.tenant.slug for m in memberships)
        raise refuse(
            400,
            f"You belong to several tenants; name one in Oem.Composer.Tenant: {slugs}.",
            "Base.PropertyMissing",
            "Oem/Composer/Tenant",
            properties=(TENANT_POINTER,),
        )
    else:
        chosen = memberships
    if not chosen:
        raise refuse(403, "You belong to no tenant.", "Base.InsufficientPrivilege")
    membership = chosen[0]
    if write and not membership.can_write:
        raise refuse(
            403,
            f"You have read-only access to {membership.tenant.name}: you may preview, not compose.",
            "Base.InsufficientPrivilege",
        )
    return membership.tenant


def _no_tenant(slug: str) -> RedfishError:
    return refuse(
        400,
        f"You may not compose for a tenant {slug!r}.",
        "Base.PropertyValueNotInList",
        slug,
        "Tenant",
        properties=(TENANT_POINTER,),
    )


def blocks_free(request: SystemRequest) -> None:
    """Composition.ResourceBlockInUse (409) for a named device block that a composition
    (or a hold) already claims, or that is out of service; checked before placing, so the
    client reads which block."""
    ids = [target.pk for _, target in request.blocks if isinstance(target, Device)]
    if not ids:
        return
    claimed = set(
        Allocation.objects.filter(device_id__in=ids, released_at__isnull=True).values_list(
            "device_id", flat=True
        )
    )
    for at, target in request.blocks:
        if not isinstance(target, Device):
            continue
        if target.is_partitionable:
            busy = target.allocated_gib >= target.memory_gib
        else:
            busy = target.pk in claimed or target.state in (DeviceState.RESERVED, DeviceState.BOUND)
        out = target.state in (DeviceState.FAILED, DeviceState.MAINTENANCE)
        if busy or out:
            raise refuse(
                409,
                f"Resource block {block_path(target)} cannot be composed now: it is "
                f"{'in use' if busy else 'out of service'}.",
                "Composition.ResourceBlockInUse",
                block_path(target).rsplit("/", 1)[-1],
                properties=(at,),
            )


def rejection_words(plan: dict[str, Any], *, operator: bool) -> str:
    """A rejection's reason (and the nearest alternative) in the reader's words."""
    public = plan_public(plan, operator=operator) or {}
    words = str(public.get("message") or "Nothing fits this request now.")
    nearest = public.get("nearest")
    return f"{words} {nearest}".strip() if isinstance(nearest, str) and nearest else words


def rejection_refusal(reason: str, request: SystemRequest) -> RedfishError:
    """Nothing fits now: 409 Composition.NoResourceMatch with the placement's `reason`."""
    kinds = sorted({str(i["kind"]) for i in request.spec.get("items") or []})
    if request.spec.get("memory_gib"):
        kinds.append("Memory")
    what = ", ".join(kinds) or "ResourceBlock"
    if request.blocks:
        at = request.blocks[0][0]
        return refuse(409, reason, "Composition.NoResourceMatch", what, properties=(at,))
    return refuse(409, reason, "Composition.NoResourceMatch", what)


def composer_refusal(exc: ComposerError, request: SystemRequest | None) -> RedfishError:
    """A ComposerError as the Redfish error that names the property at fault."""
    pointer = request.pointer(exc.field) if request is not None else "#"
    name = pointer.rsplit("/", 1)[-1] if pointer != "#" else (exc.field or "request")
    props = (pointer,) if pointer != "#" else ()
    if isinstance(exc, QuotaExceeded):
        return refuse(409, exc.message, "Base.ResourceExhaustion", SYSTEMS, properties=props)
    if isinstance(exc, NameTaken):
        value = request.name if request is not None else ""
        return refuse(
            409,
            exc.message,
            "Base.ResourceAlreadyExists",
            "ComputerSystem",
            "Name",
            value,
            properties=props,
        )
    if isinstance(exc, InvalidTransition | StaleState):
        return refuse(409, exc.message, "Base.ResourceInUse")
    last = (exc.field or "").rsplit(".", 1)[-1]
    value = _value_at(request, exc.field)
    if last in CHOICES:
        return refuse(
            400, exc.message, "Base.PropertyValueNotInList", value, name, properties=props
        )
    if any(word in exc.message for word in RANGE_WORDS):
        return refuse(
            400, exc.message, "Base.PropertyValueOutOfRange", value, name, properties=props
        )
    return refuse(400, exc.message, "Base.PropertyValueError", name, properties=props)


def _value_at(request: SystemRequest | None, spec_field: str | None) -> Any:
    """The value the request gave for a spec field (for the message's arguments)."""
    if request is None or not spec_field:
        return ""
    value: Any = request.spec
    for part in spec_field.replace("[", ".").replace("]", "").split("."):
        if isinstance(value, dict):
            value = value.get(part, "")
        elif (
            isinstance(value, list) and part.isascii() and part.isdigit() and int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            return ""
    return value if not isinstance(value, dict | list) else ""


@contextmanager
def refused_as_redfish(request: SystemRequest | None) -> Iterator[None]:
    """Run a service: its ComposerError comes out as the Redfish error."""
    try:
        yield
    except ComposerError as exc:
        raise composer_refusal(exc, request) from exc


@contextmanager
def within(prefix: str) -> Iterator[None]:
    """Errors about a request nested in a body (a manifest's stanza) point into it."""
    try:
        yield
    except RedfishError as exc:
        for info in exc.messages:
            info["RelatedProperties"] = [
                prefix + p[1:] for p in info.get("RelatedProperties", []) if p.startswith("#")
            ]
            if not info["RelatedProperties"]:
                del info["RelatedProperties"]
        raise
