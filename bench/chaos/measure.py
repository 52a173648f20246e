"""What the run did to the product, measured from outside: the database, the fabric as the
driver reads it, and what the websocket clients received.

- Recovery: for each disruption, the compositions that were mid-step at that moment (in
  a transitional state, requested, placing, binding, healing or decomposing, entered less
  than 60 s before: one stuck since an earlier disruption is not counted again) and, from
  their StateChange rows, when each next reached a settled state (ready, degraded,
  failed, released, rejected). The disruption's recovery time is the longest of those
  waits; one still unsettled when the run ended counts until the end (a lower bound,
  marked so in the report).
- Stuck: a composition that stayed transitional more than 60 s in one stretch, from its
  StateChange rows (or until the end of the run for one that never settled).
- Orphan bindings: after the quiet period, bindings the fabric holds (`get_driver(manager)
  .bindings()`) that no unreleased allocation records; and the converse (missing).
- Double allocations: a whole device held by two unreleased allocations or bound twice on
  the fabric, or a memory device's slices beyond its capacity, in the database or on the
  fabric; sampled every few seconds during the run and once at the end.
- Events lost: per websocket client, the events the database recorded for its tenant after
  its first hello, up to a cutoff taken after the quiet period, that it never received.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection

from bench.chaos.kills import Disruption
from bench.chaos.load import SETTLED, STUCK_AFTER_S, TRANSITIONAL, db_retry
from composer.models import Allocation, EventAudience, StateChange
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager


def doubles_now(manager_name: str) -> list[str]:
    """Devices held or bound beyond their capacity right now, in words (empty: none)."""
    found: list[str] = []
    whole = Allocation.objects.filter(released_at__isnull=True, gib__isnull=True).values_list(
        "device_id", flat=True
    )
    for device_id, count in Counter(whole).items():
        if count > 1:
            found.append(f"device {device_id}: {count} unreleased allocations")
    slices: dict[int, int] = defaultdict(int)
    for device_id, gib in Allocation.objects.filter(
        released_at__isnull=True, gib__isnull=False
    ).values_list("device_id", "gib"):
        slices[device_id] += gib
    sizes = dict(Device.objects.filter(pk__in=slices).values_list("pk", "memory_gib"))
    found += [
        f"device {pk}: {gib} GiB allocated of {sizes[pk]}"
        for pk, gib in slices.items()
        if gib > sizes[pk]
    ]
    manager = FabricManager.objects.get(name=manager_name)
    bindings = get_driver(manager).bindings()
    bound = Counter(b.device_id for b in bindings if b.size_gib is None)
    found += [f"{ext}: bound {n} times on the fabric" for ext, n in bound.items() if n > 1]
    bound_gib: dict[str, int] = defaultdict(int)
    for b in bindings:
        if b.size_gib is not None:
            bound_gib[b.device_id] += b.size_gib
    capacity = dict(
        Device.objects.filter(manager=manager, external_id__in=bound_gib).values_list(
            "external_id", "memory_gib"
        )
    )
    found += [
        f"{ext}: {gib} GiB bound of {capacity.get(ext)}"
        for ext, gib in bound_gib.items()
        if capacity.get(ext) is not None and gib > capacity[ext]
    ]
    return found


class Sampler(threading.Thread):
    """Looks for double allocations every `interval_s` while the run goes on."""

    def __init__(self, manager: str, interval_s: float = 5.0) -> None:
        super().__init__(name="sampler", daemon=True)
        self.manager, self.interval_s = manager, interval_s
        self.stopping = threading.Event()
        self.samples = 0
        self.doubles: set[str] = set()
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stopping.wait(self.interval_s):
            try:
                self.doubles.update(db_retry(lambda: doubles_now(self.manager)))
                self.samples += 1
            except Exception as exc:
                if len(self.errors) < 5:
                    self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
        connection.close()


@dataclass
class Recovery:
    disruption: Disruption
    touched: list[int] = field(default_factory=list)  # mid-step at that moment
    waits_s: list[float] = field(default_factory=list)  # one per touched composition
    settled_s: list[float] = field(default_factory=list)  # of those that settled
    unsettled_ids: list[int] = field(default_factory=list)  # still transitional at the end

    @property
    def unsettled(self) -> int:
        return len(self.unsettled_ids)

    @property
    def seconds(self) -> float | None:
        return max(self.waits_s) if self.waits_s else None


Timeline = list[tuple[float, str]]


def timelines(since: float) -> dict[int, Timeline]:
    """Every composition's state changes (time.time(), state), oldest first."""
    rows = StateChange.objects.filter(composition__name__startswith="chaos-").order_by("at", "pk")
    found: dict[int, Timeline] = defaultdict(list)
    for pk, at, state in rows.values_list("composition_id", "at", "to_state"):
        found[pk].append((at.timestamp(), state))
    return found


def stretch_start(timeline: Timeline, moment: float) -> float | None:
    """When the transitional stretch that holds `moment` began; None when it is settled."""
    start = None
    for at, to in timeline:
        if at > moment:
            break
        start = (at if start is None else start) if to in TRANSITIONAL else None
    return start


def settled_after(timeline: Timeline, moment: float) -> float | None:
    return next((at for at, to in timeline if at > moment and to in SETTLED), None)


def recoveries(
    disruptions: list[Disruption], lines: dict[int, Timeline], end: float
) -> list[Recovery]:
    """For each disruption, how long its touched compositions took to settle after it."""
    found = []
    for disruption in disruptions:
        recovery = Recovery(disruption)
        for pk in disruption.touched:
            line = lines.get(pk, [])
            began = stretch_start(line, disruption.at)
            if began is None or disruption.at - began > STUCK_AFTER_S:
                # Settled between the moment it was read and the kill, or stuck since
                # before (counted as stuck): not touched by this one.
                continue
            recovery.touched.append(pk)
            settled = settled_after(line, disruption.at)
            if settled is None:
                recovery.unsettled_ids.append(pk)
                recovery.waits_s.append(end - disruption.at)
            else:
                recovery.waits_s.append(max(0.0, settled - disruption.at))
                recovery.settled_s.append(max(0.0, settled - disruption.at))
        found.append(recovery)
    return found


def stuck(lines: dict[int, Timeline], end: float) -> dict[int, float]:
    """Compositions that stayed transitional longer than STUCK_AFTER_S in one stretch:
    {id: the longest stretch, in seconds (until `end` for one never settled)}."""
    found: dict[int, float] = {}
    for pk, line in lines.items():
        entered: float | None = None
        longest = 0.0
        for at, to in [*line, (end, "")]:
            if entered is not None and (to in SETTLED or to == ""):
                longest = max(longest, at - entered)
                entered = None
            if to in TRANSITIONAL and entered is None:
                entered = at
        if longest > STUCK_AFTER_S:
            found[pk] = longest
    return found


def fabric_agreement(manager_name: str) -> tuple[list[str], list[str]]:
    """(orphans: fabric bindings no unreleased allocation records; missing: allocations
    recorded BOUND whose binding the fabric does not hold)."""
    manager = FabricManager.objects.get(name=manager_name)
    on_fabric = {b.binding_id for b in get_driver(manager).bindings()}
    recorded = set(
        Allocation.objects.filter(released_at__isnull=True)
        .exclude(binding_id="")
        .values_list("binding_id", flat=True)
    )
    return sorted(on_fabric - recorded), sorted(recorded - on_fabric)


def events_lost(clients: list[dict[str, Any]], tenant_id: int, cutoff: int) -> list[int]:
    """Per client, how many events its tenant heard up to `cutoff` it never received."""
    lost = []
    for client in clients:
        start = int(client["start_id"] or 0)
        expected = set(
            EventAudience.objects.filter(
                tenant_id=tenant_id, event_id__gt=start, event_id__lte=cutoff
            ).values_list("event_id", flat=True)
        )
        lost.append(len(expected - set(client["ids"])))
    return lost


def at_iso(moment: float) -> str:
    return datetime.fromtimestamp(moment).strftime("%H:%M:%S")


def diagnosis(
    disruptions: list[Disruption], lines: dict[int, Timeline], stuck_ids: dict[int, float]
) -> str:
    """A plain-text account of the run for `--logs`: every disruption, then each stuck
    composition's state changes and jobs, so that a missed target can be traced to a cause
    in the processes' logs (the database is dropped with the run)."""
    from composer.models import Job

    out = ["disruptions:"]
    out += [
        f"  {at_iso(d.at)} {d.kind} {d.target} touched={d.touched} {d.detail}" for d in disruptions
    ]
    for pk, seconds in sorted(stuck_ids.items(), key=lambda item: -item[1]):
        out.append(f"\ncomposition {pk}: stuck {seconds:.0f} s")
        out += [f"  {at_iso(at)} -> {state}" for at, state in lines.get(pk, [])]
        jobs = Job.objects.filter(target_id=pk).exclude(kind="inventory_sync").order_by("pk")
        for job in jobs:
            stamps = " ".join(
                f"{name}={at_iso(value.timestamp()) if value else '-'}"
                for name, value in (
                    ("created", job.created_at),
                    ("dispatched", job.dispatched_at),
                    ("started", job.started_at),
                    ("finished", job.finished_at),
                )
            )
            out.append(
                f"  job {job.pk} {job.kind} {job.status} attempts={job.attempts} "
                f"resumes={job.resumes} {stamps} message={job.message!r} error={job.error[:200]!r}"
            )
            for line in job.log_lines.order_by("at", "pk"):
                out.append(f"    {line.at:%H:%M:%S} {line.level} {line.message[:200]}")
    return "\n".join(out) + "\n"
