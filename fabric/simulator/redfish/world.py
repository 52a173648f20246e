"""One read of a simulated fabric's state, and the version that says when it changed.

The Redfish tree is rendered from a `World` (every present element, every binding, the
memory chunks carved but not yet connected). Rendering costs a pass over the world, so
the server keeps the last rendering until `version()` says the state moved on: a
discovery's thousands of GETs then cost one rendering, not one each.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Q

from fabric.simulator import store
from fabric.simulator.models import SimulatedBinding, SimulatedElement


@dataclass(frozen=True, slots=True)
class Element:
    """What rendering needs of one simulated element."""

    kind: str
    external_id: str
    data: dict[str, Any]
    fault: str
    updated_at: datetime | None = None  # when its fault last changed: counters grow since

    def get(self, name: str, default: Any = "") -> Any:
        value = self.data.get(name)
        return default if value is None else value


@dataclass(frozen=True, slots=True)
class Slice:
    """A memory slice as Redfish shows it: a chunk of a device's domain, connected to a
    host when `binding_id` is set (the simulator's binding), pending when not."""

    chunk_id: str
    device_id: str
    size_gib: int
    host_id: str = ""
    binding_id: str = ""


@dataclass
class World:
    """Every present element of one simulated fabric, by kind and by id, and its bindings."""

    fabric: str
    by_kind: dict[str, list[Element]] = field(default_factory=dict)
    by_id: dict[str, Element] = field(default_factory=dict)
    bindings: list[SimulatedBinding] = field(default_factory=list)
    pending: list[Slice] = field(default_factory=list)

    def of(self, kind: str) -> list[Element]:
        return self.by_kind.get(kind, [])


class PendingChunks:
    """Memory chunks created (POST to a domain's MemoryChunks) but not yet connected.

    The simulator binds memory by the slice, so a chunk becomes a binding only when a
    Connection gives it to a host; until then it is held here, in the serving process,
    where it counts against the domain's capacity. A restart forgets them, as a manager
    reclaims chunks nobody connected.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()  # held across a capacity check and add()
        self.items: dict[str, Slice] = {}
        self.changes = 0

    def add(self, device_id: str, size_gib: int) -> Slice:
        chunk = Slice(chunk_id=f"c-{uuid.uuid4().hex[:12]}", device_id=device_id, size_gib=size_gib)
        with self.lock:
            self.items[chunk.chunk_id] = chunk
            self.changes += 1
        return chunk

    def pop(self, chunk_id: str) -> Slice | None:
        with self.lock:
            chunk = self.items.pop(chunk_id, None)
            if chunk is not None:
                self.changes += 1
            return chunk

    def snapshot(self) -> tuple[int, list[Slice]]:
        with self.lock:
            return self.changes, list(self.items.values())


def version(fabric_name: str, pending: PendingChunks) -> tuple[Any, ...]:
    """A key that changes whenever what the tree shows changes: elements (how many are
    present; the newest `updated_at`, which a fault's change moves), bindings (how many,
    the newest id), pending chunks. Two queries: every request asks it. (A world rewritten
    in place by `world_write` with the same elements present and only their data changed
    shows once anything else changes, or after a restart of the server.)"""
    elements = SimulatedElement.objects.filter(fabric__name=fabric_name).aggregate(
        n=Count("id", filter=Q(is_present=True)), at=Max("updated_at")
    )
    if not elements["n"]:
        store.fabric_get(fabric_name)  # no such fabric: the operator's message
    bindings = SimulatedBinding.objects.filter(fabric__name=fabric_name).aggregate(
        n=Count("id"), top=Max("id")
    )
    return (elements["n"], elements["at"], bindings["n"], bindings["top"], pending.snapshot()[0])


def with_bindings(world: World, pending: PendingChunks) -> World:
    """`world`'s elements with the bindings and carved chunks as they are now."""
    fabric = store.fabric_get(world.fabric)
    return replace(world, bindings=store.bindings_for(fabric), pending=pending.snapshot()[1])


def load(fabric_name: str, pending: PendingChunks) -> World:
    """Read the fabric's present elements and bindings (two queries)."""
    fabric = store.fabric_get(fabric_name)
    world = World(fabric=fabric.name)
    rows = (
        SimulatedElement.objects.filter(fabric=fabric, is_present=True)
        .only("kind", "external_id", "data", "fault", "updated_at")
        .order_by("kind", "external_id")
    )
    for row in rows:
        element = Element(
            row.kind, row.external_id, dict(row.data or {}), row.fault or "", row.updated_at
        )
        world.by_kind.setdefault(row.kind, []).append(element)
        world.by_id[row.external_id] = element
    world.bindings = store.bindings_for(fabric)
    world.pending = pending.snapshot()[1]
    return world
