"""Placing a request that names its devices (a "specific composition"). Pure Python.

The devices named are taken as named or not at all: each must be usable in the snapshot
(free, healthy; a memory device with the GiB asked free), outside what another tenant
holds critically (a tenant reads only that it cannot be isolated; which switch or
enclosure, and whose, is the operator's sentence), and reached by the host within the
latency ceiling (and a memory device must not already hold a slice for that host). The
host is the one asked for, else the nearest of those that reach them all (ties:
`scoring.host_rank`). Whatever else the request asks for (items, memory, storage) is
placed by the engine on that host, on the snapshot less the pinned devices; the uplink
budget counts both. The failure-domain policy and same switch apply to what the engine
chooses, not to what the request named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from composer.placement.constraints import blocked_domains
from composer.placement.request import (
    DevicePick,
    Note,
    PinnedDevice,
    Placement,
    PlacementRequest,
    Rejection,
)
from composer.placement.scoring import host_rank, plan_score
from composer.placement.shares import charged_gbps
from composer.placement.snapshot import DeviceInfo, HostInfo, Snapshot
from fabric.kinds import balanced, find, is_sliced

__all__ = ["device_words", "place_pinned"]

MAX_HOSTS_TRIED = 32  # hosts the rest of the request is planned on before giving up
Place = Callable[[PlacementRequest, Snapshot], "Placement | Rejection"]


def device_words(kind: str, name: str) -> str:
    """A device in a sentence: "GPU gpu-03", "CXL memory cxl-01", "DPU dpu-2"."""
    declared = find(kind)
    return f"{declared.label if declared else kind.upper()} {name}"


def place_pinned(
    request: PlacementRequest, snapshot: Snapshot, place: Place
) -> Placement | Rejection:
    """The plan that takes exactly the pinned devices of `request` (and places the rest of it
    with `place` on the same host), or the rejection naming the device at fault."""
    taken: list[tuple[DeviceInfo, int | None]] = []
    blocked = blocked_domains(request, snapshot)
    for pin in request.pinned:
        usable = _usable(request, pin, snapshot, blocked)
        if isinstance(usable, Rejection):
            return usable
        taken.append(usable)
    hosts = [snapshot.hosts[request.host]] if request.host else list(snapshot.hosts.values())
    fitting = [h for h in hosts if h.cores_free >= request.cores]
    fitting = [h for h in fitting if h.memory_gib_free >= request.host_memory_gib]
    funnel = [("hosts: cores and memory", len(hosts), len(fitting))]
    if not fitting:
        return Rejection(
            "no_capacity", "No host has the cores and memory asked for.", tuple(funnel)
        )
    reaching = [h for h in fitting if _reach_problem(request, snapshot, h, taken) is None]
    funnel.append(("hosts: reach the named devices", len(fitting), len(reaching)))
    if not reaching:
        return Rejection(
            "latency" if request.max_latency_ns else "no_capacity",
            _unreached(request, snapshot, fitting, taken),
            tuple(funnel),
        )
    gpus = sum(1 for d, _ in taken if d.kind in balanced())
    # Nearest to the named devices first (their paths are the request's own choice), then
    # the engine's own ranking.
    reaching.sort(
        key=lambda h: (
            sum(snapshot.reach[h.id][d.enclosure].latency_ns for d, _ in taken),
            host_rank(request, snapshot, h, gpus),
        )
    )
    rest = replace(request, pinned=())
    left = snapshot.taking(
        devices=[d.id for d, gib in taken if gib is None],
        memory_gib={d.id: gib for d, gib in taken if gib is not None},
    )
    last: Rejection | None = None
    for host in reaching[:MAX_HOSTS_TRIED]:
        outcome = _plan(request, rest, snapshot, left, host, taken, place)
        if isinstance(outcome, Placement):
            return replace(outcome, funnel=(*funnel, *outcome.funnel))
        last = outcome
    assert last is not None
    return replace(last, funnel=(*funnel, *last.funnel))


def _usable(
    request: PlacementRequest, pin: PinnedDevice, snapshot: Snapshot, blocked: frozenset[str]
) -> tuple[DeviceInfo, int | None] | Rejection:
    """The pinned device and the GiB it gives (None: whole), or why it cannot be had."""
    words = device_words(pin.kind, pin.name)
    device = snapshot.devices.get(pin.device)
    if device is None:
        return Rejection("no_capacity", f"{words} is not free or not usable now.")
    enclosure = snapshot.enclosures[device.enclosure]
    if device.enclosure in blocked or blocked.intersection(enclosure.switches):
        return _isolation(request, snapshot, device, blocked, words)
    if device.shared_host is not None:
        return Rejection("no_capacity", f"{words} is shared: it cannot be taken whole now.")
    if not is_sliced(device.kind):
        if pin.gib is not None:
            return Rejection("invalid", f"{words} is bound whole: GiB are for CXL memory only.")
        return device, None
    gib = pin.gib or device.free_gib
    if gib > device.free_gib:
        return Rejection(
            "no_capacity", f"{words} has {device.free_gib:,} GiB free; {gib:,} GiB asked."
        )
    return device, gib


def _isolation(
    request: PlacementRequest,
    snapshot: Snapshot,
    device: DeviceInfo,
    blocked: frozenset[str],
    words: str,
) -> Rejection:
    """The rejection of a pinned device that isolation keeps from the request. The message
    (failure reason, audit, answers: read by the tenant) says only that: where other tenants
    run is theirs. Which switch or enclosure, and why, is the operator's sentence alone."""
    enclosure = snapshot.enclosures[device.enclosure]
    domain = next(d for d in (device.enclosure, *enclosure.switches) if d in blocked)
    where = (
        f"enclosure {enclosure.name}"
        if domain == device.enclosure
        else f"switch {snapshot.switch_names.get(domain, domain)}"
    )
    if snapshot.critical.get(domain, request.tenant) != request.tenant:
        why = f"another tenant holds {where} critically"
    else:
        why = f"this request is critical and another tenant holds devices behind {where}"
    if request.critical:
        message, ask = f"{words} cannot be isolated as asked.", "ask without critical"
    else:
        message, ask = f"{words} is not available to this request now.", "wait"
    return Rejection(
        "domain_conflict",
        message,
        nearest=Note(
            f"{words} is kept out: {why}; name another device or {ask}.",
            f"Name another device or {ask}.",
        ),
    )


def _reach_problem(
    request: PlacementRequest,
    snapshot: Snapshot,
    host: HostInfo,
    taken: Sequence[tuple[DeviceInfo, int | None]],
) -> str | None:
    """Why `host` cannot take the pinned devices (a sentence naming one), or None."""
    reach = snapshot.reach.get(host.id, {})
    ceiling = request.max_latency_ns
    sliced = snapshot.sliced.get(host.id, frozenset())
    for device, gib in taken:
        words = device_words(device.kind, device.name)
        path = reach.get(device.enclosure)
        if path is None:
            return f"{words} cannot reach host {host.name}."
        if ceiling is not None and path.latency_ns > ceiling:
            return (
                f"{words} is {path.latency_ns} ns from host {host.name}, over the "
                f"{ceiling} ns latency ceiling."
            )
        if gib is not None and device.id in sliced:
            return f"Host {host.name} already holds a slice of {words}."
    return None


def _unreached(
    request: PlacementRequest,
    snapshot: Snapshot,
    hosts: Sequence[HostInfo],
    taken: Sequence[tuple[DeviceInfo, int | None]],
) -> str:
    """The rejection's sentence when no host reaches the pinned devices: the asked-for
    host's own reason, else the first device no host reaches alone, else that none reaches
    them together."""
    if request.host:
        return _reach_problem(request, snapshot, hosts[0], taken) or "Unreachable."
    for one in taken:
        if all(_reach_problem(request, snapshot, h, [one]) for h in hosts):
            return f"No usable host reaches {device_words(one[0].kind, one[0].name)}."
    named = ", ".join(device_words(d.kind, d.name) for d, _ in taken)
    return f"No usable host reaches {named} together."


def _plan(
    request: PlacementRequest,
    rest: PlacementRequest,
    snapshot: Snapshot,
    left: Snapshot,
    host: HostInfo,
    taken: Sequence[tuple[DeviceInfo, int | None]],
    place: Place,
) -> Placement | Rejection:
    """The pinned devices on `host`, with the rest of the request placed around them."""
    reach = snapshot.reach[host.id]
    picks = [
        DevicePick(
            d.id,
            d.name,
            d.kind,
            d.enclosure,
            reach[d.enclosure].latency_ns,
            reach[d.enclosure].bottleneck_gbps,
            gib,
            reach[d.enclosure].estimated_hops,
        )
        for d, gib in taken
    ]
    devices = [p for p in picks if p.gib is None]
    memory = [p for p in picks if p.gib is not None]
    notes: list[Note] = []
    if rest.items or rest.memory_gib or rest.storage_tb:
        outcome = place(replace(rest, host=host.id), left)
        if isinstance(outcome, Rejection):
            return outcome
        devices += outcome.devices
        memory += outcome.memory
        notes += outcome.explanation
    demand = sum(charged_gbps(p) for p in (*devices, *memory))
    budget = host.uplink_gbps * snapshot.oversubscription - host.uplink_used_gbps
    if demand > budget + 1e-9:
        # Written for tenants too: it names no host the request did not name.
        message = (
            f"Host {host.name} lacks the uplink bandwidth for the devices named"
            if request.host
            else "No host that reaches the devices named has the uplink bandwidth for them"
        )
        return Rejection("no_capacity", f"{message} ({demand:.0f} GB/s).")
    score, sentences = plan_score(
        request, snapshot, host, (*devices, *memory), host_rank(request, snapshot, host, 0)[0]
    )
    named = ", ".join(
        f"{p.gib:,} GiB of {device_words(p.kind, p.name)}"
        if p.gib is not None
        else device_words(p.kind, p.name)
        for p in picks
    )
    lead = Note(
        f"Named devices taken as asked, on host {host.name}: {named}"
        + (" (the rest placed around them)." if notes else ".")
    )
    return Placement(
        host.id,
        host.name,
        tuple(devices),
        tuple(memory),
        score,
        (lead, *(notes or sentences)),
    )
