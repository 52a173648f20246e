"""The wire format of live events: groups, payloads, messages, and what a tenant is sent.

Payloads carry ids, names and states, never HTML or secrets; each `TypedDict`
here is the contract of one event type (docs/events.md). `payload_for` is the one rule
that cuts a payload down to what a tenant may see.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, Literal, NotRequired, TypedDict

from django.core.serializers.json import DjangoJSONEncoder

from composer.models import Event
from fabric.health.wording import tenant_alert_message

# --- groups -----------------------------------------------------------------------------------

OPERATORS_GROUP = "operators"


def tenant_group(tenant_id: int) -> str:
    return f"tenant-{tenant_id}"


def composition_group(composition_id: int) -> str:
    return f"composition-{composition_id}"


def job_group(job_id: int) -> str:
    return f"job-{job_id}"


# --- payloads (ids and states; never HTML or secrets) -----------------------------------------


class CompositionRef(TypedDict):
    """A composition named in another event (an alert's blast radius, a device's users)."""

    id: int
    name: str
    tenant_id: int
    state: str


# Functional syntax: "from" is a keyword.
CompositionStatePayload = TypedDict(
    "CompositionStatePayload",
    {
        "type": Literal["composition.state"],
        "composition_id": int,
        "name": str,
        "tenant_id": int,
        "from": str,
        "to": str,
        "reason": str,
    },
)


class JobProgressPayload(TypedDict):
    """Where a job stands. `last_log_line_id`: fetch the log lines after the ones you have."""

    type: Literal["job.progress"]
    job_id: int
    kind: str
    status: str
    tenant_id: int | None  # None: fabric work, for operators only
    composition_id: int | None
    target_label: str
    progress_done: int
    progress_total: int
    percent: int
    message: str
    error: str
    last_log_line_id: int | None


class AlertInfo(TypedDict):
    """An alert as events carry it (composer.services.health_poll.alert_event_payload)."""

    id: int
    severity: str
    state: str  # "open" | "closed"
    source_type: str
    source_id: int | None
    source_name: str
    rule: str
    message: str
    opened_at: str | None
    closed_at: str | None
    occurrences: int
    is_flapping: bool
    acknowledged_by: str | None
    acknowledged_at: str | None


class BlastRadius(TypedDict):
    """What the failure takes with it. A tenant is sent its own compositions only, and no
    `tenants` (see `payload_for`); `devices` and `hosts` (lost) and their degraded
    counterparts are counts."""

    effect: str
    devices: int  # lost
    hosts: int  # lost
    devices_degraded: int
    hosts_degraded: int
    headline: str  # fabric.topology.radius.radius_headline of the four counts
    compositions: list[CompositionRef]  # hit: a binding lost
    compositions_degraded: list[CompositionRef]  # every binding kept, some over fewer paths
    tenants: list[int]  # of the compositions hit


class FabricAlertPayload(TypedDict):
    """An alert opened, changed or closed; heard by the tenants of its blast radius."""

    type: Literal["fabric.alert"]
    alert: AlertInfo
    blast_radius: BlastRadius


class AlertAcknowledgedPayload(TypedDict):
    type: Literal["alert.acknowledged"]
    alert: AlertInfo
    blast_radius: BlastRadius


class HealthChange(TypedDict):
    """One element whose health changed in a poll. `tenant_id` and `composition_id` are set
    for a device a composition holds (its tenant hears of it), else null: operators only. A
    device several compositions hold (slices of a memory device) has one row for each."""

    target_type: str  # "device", "switch", "link", ...
    kind: str  # a device's kind ("gpu", "cxl_memory", ...); else the target type again
    id: int
    name: str
    health: str
    previous_health: str
    composition_id: int | None
    tenant_id: int | None


class DeviceHealthPayload(TypedDict):
    """A poll's health changes; a tenant is sent the rows of its own compositions' devices
    only, and `change_count` counts those (`payload_for`)."""

    type: Literal["device.health"]
    changes: list[HealthChange]
    change_count: int


class BookingOccurrencePayload(TypedDict):
    """What the clock of bookings did to one occurrence (`what`: started, warning, done,
    missed, failed, cancelled, extended, shortened), `message` in the tenant's words;
    heard by the booking's tenant only (`tenant_id`)."""

    type: Literal["booking.occurrence"]
    booking_id: int
    booking_name: str
    occurrence_id: int
    tenant_id: int
    what: str
    state: str
    starts_at: str
    ends_at: str
    composition_id: int | None
    message: str


class EventMessage(TypedDict):
    """What a websocket client (and an API client, per row) receives for one event."""

    type: Literal["event"]
    id: int
    event_type: str
    at: str
    composition_id: int | None
    job_id: int | None
    payload: dict[str, Any]
    replay: NotRequired[bool]  # true when it came from the database, not live


class LayerMessage(TypedDict):
    """An event on the channel layer: the client's frame, already encoded, plus what the
    consumer checks before sending it (the event id to de-duplicate, the tenant it was cut
    for; None means the full payload, for operators only)."""

    type: Literal["event.message"]
    id: int
    tenant_id: int | None
    text: str


# --- what a tenant is sent --------------------------------------------------------------------

# Keys that name who else is affected: never sent to a tenant.
_OTHER_TENANTS_KEYS = frozenset({"tenants", "tenant_ids", "tenant_count", "tenants_count"})
_OPERATOR_ONLY_KEYS = frozenset({"source_id", "source_name", "acknowledged_by"})
# What a tenant may know of a blast radius: which of its compositions it hits and which it
# degrades, and how. The rest (the fabric's device and host counts and ids, whatever a
# radius grows later) describes the fabric, and stays with operators.
_TENANT_RADIUS_KEYS = frozenset(
    {
        "effect",
        "compositions",
        "composition_count",
        "compositions_degraded",
        "compositions_degraded_count",
    }
)


def payload_for(event: Event, *, tenant_id: int | Collection[int]) -> dict[str, Any] | None:
    """The part of `event`'s payload that the tenant(s) `tenant_id` may see; None: none of it.

    One generic rule, applied at every depth, so new payloads are safe without new code:

    - an object (dict) with a `tenant_id` key belongs to that tenant: it is kept only when
      that is one of the given tenants (`tenant_id: null` means operators only). In a list
      (the `compositions` of a blast radius) other tenants' entries are dropped; as a value
      the key is dropped; when the payload itself belongs to someone else, the answer is None;
    - a `tenant` object (`{"id": ...}`) of another tenant is dropped likewise;
    - the keys `tenants`, `tenant_ids`, `tenant_count` and `tenants_count` are dropped, and
      so are the keys that name fabric internals or operators (`source_id`,
      `source_name`, `acknowledged_by`: an alert's console id and element name, and who
      acknowledged it — as the tenant's alert API shows it);
    - an alert (an object with `source_type` and `message`) gets its `message` in a tenant's
      words (`fabric.health.wording`): the operator's names the element and carries the
      fabric manager's own text;
    - a `blast_radius` keeps only `effect` and the compositions it hits and degrades
      (`compositions`, `compositions_degraded` and their counts): the fabric's counts of
      devices and hosts are not a tenant's to know;
    - where a list under key `K` lost entries, the counts `K_count` and `<K without s>_count`
      beside it are recomputed (`compositions` -> `composition_count`, `compositions_count`;
      `compositions_degraded` -> `compositions_degraded_count`).

    Lists must be complete for the counts to be exact.
    """
    allowed = frozenset({tenant_id} if isinstance(tenant_id, int) else tenant_id)
    payload = event.payload if isinstance(event.payload, dict) else {}
    if not _owned_by(payload, allowed):
        return None
    return _scope_dict(payload, allowed)


def blast_radius_for(radius: Any, *, tenant_id: int | Collection[int]) -> dict[str, Any]:
    """A stored blast radius as the tenant(s) `tenant_id` may know it: the same rule as a
    `blast_radius` in an event (`payload_for`), with both lists and their counts set (an
    alert stored before degraded compositions were has none)."""
    payload = {"blast_radius": dict(radius) if isinstance(radius, dict) else {}}
    scoped = payload_for(Event(payload=payload), tenant_id=tenant_id) or {}
    out: dict[str, Any] = scoped.get("blast_radius") or {}
    for key, count in (
        ("compositions", "composition_count"),
        ("compositions_degraded", "compositions_degraded_count"),
    ):
        out[key] = list(out.get(key) or ())
        out[count] = len(out[key])
    return out


def _owned_by(value: Any, allowed: frozenset[int]) -> bool:
    """False for a dict that carries a `tenant_id` other than one of `allowed` (null, or a
    value that is no id at all, included)."""
    if not (isinstance(value, dict) and "tenant_id" in value):
        return True
    owner = value["tenant_id"]
    return isinstance(owner, int) and not isinstance(owner, bool) and owner in allowed


def _scope_dict(value: dict[str, Any], allowed: frozenset[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    shortened: list[str] = []
    for key, item in value.items():
        if key in _OTHER_TENANTS_KEYS or key in _OPERATOR_ONLY_KEYS or not _owned_by(item, allowed):
            continue
        if (
            key == "tenant"
            and isinstance(item, dict)
            and not _owned_by({"tenant_id": item.get("id")}, allowed)
        ):
            continue
        if isinstance(item, list):
            kept = _scope_list(item, allowed)
            if len(kept) != len(item):
                shortened.append(key)
            out[key] = kept
        elif isinstance(item, dict):
            if key == "blast_radius":
                item = {k: v for k, v in item.items() if k in _TENANT_RADIUS_KEYS}
            out[key] = _scope_dict(item, allowed)
        else:
            out[key] = item
    if "message" in value and isinstance(value.get("source_type"), str):
        out["message"] = tenant_alert_message(value["source_type"], str(value.get("rule") or ""))
    for key in shortened:
        for count_key in (f"{key}_count", f"{key.removesuffix('s')}_count"):
            if count_key in out and count_key not in _OTHER_TENANTS_KEYS:
                out[count_key] = len(out[key])
    return out


def _scope_list(items: list[Any], allowed: frozenset[int]) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        if not _owned_by(item, allowed):
            continue
        if isinstance(item, dict):
            kept.append(_scope_dict(item, allowed))
        elif isinstance(item, list):
            kept.append(_scope_list(item, allowed))
        else:
            kept.append(item)
    return kept


# --- messages ---------------------------------------------------------------------------------


def event_message(event: Event, *, payload: dict[str, Any], replay: bool = False) -> EventMessage:
    """The client's message for `event` carrying `payload` (already scoped by the caller)."""
    message: EventMessage = {
        "type": "event",
        "id": event.pk,
        "event_type": event.type,
        "at": event.at.isoformat(),
        "composition_id": event.composition_id,
        "job_id": event.job_id,
        "payload": payload,
    }
    if replay:
        message["replay"] = True
    return message


def event_message_text(event: Event, *, payload: dict[str, Any], replay: bool = False) -> str:
    """`event_message` as the JSON text frame the websocket sends."""
    return json.dumps(
        event_message(event, payload=payload, replay=replay),
        cls=DjangoJSONEncoder,
        separators=(",", ":"),
    )
