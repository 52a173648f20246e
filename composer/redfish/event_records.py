"""Composer's events as Redfish Events: which registry messages say what happened, about
which resource.

Pure: the input is the event as the websocket sends it (`composer.events.event_message`,
its payload already cut for the listener by `payload_for`), so a tenant's records can only
name what its own cut of the payload names. One Composer event becomes one Redfish Event
(same id) with one record per resource it touched, or none when nothing a Redfish client
reads changed (an alert's acknowledgement, a health change of a fabric element that the
service does not serve as a resource block).

- composition.state, on the system: `ResourceEvent.ResourceCreated` (its first move, out
  of requested), `ResourceRemoved` (released, rejected), else `ResourceStateChanged` when
  its `Status.State` changed and `ResourceStatusChanged<Health>` when its `Status.Health`
  did; on each of its blocks `Composition.ResourceBlockCompositionStateChanged` when they
  became composed or free again;
- job.progress: `ResourceEvent.ResourceChanged` on the task;
- fabric.alert: `ResourceStatusChanged<Health>` on each system it hits (Critical or
  Warning while open, OK once closed) or degrades (Warning, then OK);
- device.health: `ResourceStatusChanged<Health>` on the resource block of each device or
  host whose health changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from composer.choices import CompositionState, EventType
from composer.redfish.paths import resource_block, system, task
from fabric.redfish_render.build import Resource, event
from fabric.redfish_render.messages import event_record

S = CompositionState
# A composed system's Status as its state shows it (the Resource schema's State and Health).
SYSTEM_STATE: dict[str, str] = {
    S.REQUESTED: "Starting",
    S.PLACING: "Starting",
    S.BINDING: "Starting",
    S.READY: "Enabled",
    S.DEGRADED: "Enabled",
    S.HEALING: "Enabled",
    S.RESIZING: "Enabled",
    S.DECOMPOSING: "Disabled",
    S.RELEASED: "Absent",
    S.FAILED: "UnavailableOffline",
    S.REJECTED: "Absent",
}
SYSTEM_HEALTH: dict[str, str] = {S.DEGRADED: "Warning", S.HEALING: "Warning", S.FAILED: "Critical"}
# Moves after which the composition's blocks are composed (READY) or free again.
BLOCKS_MOVE: dict[str, frozenset[str]] = {
    S.READY: frozenset({S.BINDING, S.HEALING, S.RESIZING}),
    S.RELEASED: frozenset(S),
    S.FAILED: frozenset(S),
}
# fabric.choices.Health as Redfish's Health ("unknown" has none: such a change is not sent).
_HEALTH = {"ok": "OK", "warning": "Warning", "critical": "Critical"}


def blocks_change(message: dict[str, Any]) -> int | None:
    """The composition whose blocks' composition status this event changes, if any (the
    stream then looks its blocks up: `records(..., blocks=...)`)."""
    if message.get("event_type") != EventType.COMPOSITION_STATE:
        return None
    payload = message.get("payload") or {}
    to, before = payload.get("to"), payload.get("from")
    if to in BLOCKS_MOVE and before in BLOCKS_MOVE[to] and before != to:
        composition = payload.get("composition_id")
        return composition if isinstance(composition, int) else None
    return None


def redfish_event(message: dict[str, Any], *, blocks: Sequence[str] = ()) -> Resource | None:
    """The Redfish Event for one Composer event message, or None when it has no record.
    `blocks`: the resource block paths of the composition that `blocks_change` named."""
    found = records(message, blocks=blocks)
    if not found:
        return None
    event_id = str(message["id"])
    return event(event_id, "Composer event", [{**r, "EventId": event_id} for r in found])


def records(message: dict[str, Any], *, blocks: Sequence[str] = ()) -> list[Resource]:
    payload = message.get("payload") or {}
    at = str(message.get("at") or "")
    kind = message.get("event_type")
    if kind == EventType.COMPOSITION_STATE:
        return _composition(payload, at, blocks)
    if kind == EventType.JOB_PROGRESS and isinstance(payload.get("job_id"), int):
        return [
            event_record("ResourceEvent.ResourceChanged", origin=task(payload["job_id"]), at=at)
        ]
    if kind == EventType.FABRIC_ALERT:
        return _alert(payload, at)
    if kind == EventType.DEVICE_HEALTH:
        return _health(payload, at)
    return []


def _status(origin: str, health: str, at: str) -> Resource:
    return event_record(
        f"ResourceEvent.ResourceStatusChanged{health}", origin, health, origin=origin, at=at
    )


def _composition(payload: dict[str, Any], at: str, blocks: Sequence[str]) -> list[Resource]:
    composition = payload.get("composition_id")
    if not isinstance(composition, int):
        return []
    origin = system(composition)
    before, to = str(payload.get("from") or ""), str(payload.get("to") or "")
    found: list[Resource] = []
    if to in (S.RELEASED, S.REJECTED):
        found.append(event_record("ResourceEvent.ResourceRemoved", origin=origin, at=at))
    elif before in ("", S.REQUESTED):  # its first move: a request is not announced itself
        found.append(event_record("ResourceEvent.ResourceCreated", origin=origin, at=at))
    else:
        state = SYSTEM_STATE.get(to)
        if state is not None and state != SYSTEM_STATE.get(before):
            found.append(
                event_record(
                    "ResourceEvent.ResourceStateChanged", origin, state, origin=origin, at=at
                )
            )
        health = SYSTEM_HEALTH.get(to, "OK")
        if health != SYSTEM_HEALTH.get(before, "OK"):
            found.append(_status(origin, health, at))
    for block in blocks:
        block_id = block.rsplit("/", 1)[-1]
        found.append(
            event_record(
                "Composition.ResourceBlockCompositionStateChanged", block_id, origin=block, at=at
            )
        )
    return found


def _alert(payload: dict[str, Any], at: str) -> list[Resource]:
    alert = payload.get("alert") or {}
    radius = payload.get("blast_radius") or {}
    open_ = alert.get("state") == "open"
    hit = "Critical" if alert.get("severity") == "critical" else "Warning"
    found: list[Resource] = []
    seen: set[int] = set()
    for key, health in (("compositions", hit), ("compositions_degraded", "Warning")):
        for ref in radius.get(key) or ():
            composition = ref.get("id") if isinstance(ref, dict) else None
            if isinstance(composition, int) and composition not in seen:
                seen.add(composition)
                found.append(_status(system(composition), health if open_ else "OK", at))
    return found


def _health(payload: dict[str, Any], at: str) -> list[Resource]:
    found: list[Resource] = []
    for change in payload.get("changes") or ():
        if not isinstance(change, dict) or change.get("target_type") not in ("device", "host"):
            continue  # switches, ports, links: fabric internals, not resource blocks
        health = _HEALTH.get(str(change.get("health") or "").lower())
        if health is None or not isinstance(change.get("id"), int):
            continue
        kind = str(change.get("kind") or change["target_type"])  # "gpu-12", "host-3"
        found.append(_status(resource_block(kind, change["id"]), health, at))
    return found
