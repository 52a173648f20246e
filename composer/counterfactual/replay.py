"""The fixed-ratio counterfactual: the work that ran, replayed onto fixed-ratio servers.

Pure Python, no Django: `composer.selectors.counterfactual` builds the inputs from the
compositions that ran and calls `replay()`; its tests are tables without a database.

Each composition is one `Run`: the interval it was up (ready to released, clipped to the
period) and the most it held at once (GPUs in thousandths, so shares count as fractions;
cores; memory: host memory plus CXL memory, since a fixed server has only its own). The
runs are swept in time order (at one instant, departures before arrivals) and each arrival
is placed on an open server of a chosen shape by best fit (the one it leaves least room
on); when none fits, a new server is opened: the smallest chosen shape that holds it
alone. A run too big for any one server takes whole servers of its own (the shape that
needs fewest), its GPUs, cores and memory charged evenly on them; nothing else goes on
those. A server is closed when its last run leaves (the next one opened reuses it, so the
count open is the count needed). A run that no chosen shape can hold (its GPUs are of a
model the shapes lack, or the shapes have no GPUs) is counted apart as unplaced.

What the composable data centre used is the same runs' concurrent demand, each resource
at its own peak and on average over the period.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

__all__ = [
    "MILLI",
    "Held",
    "Resources",
    "Result",
    "Run",
    "Shape",
    "peak_held",
    "replay",
]

MILLI = 1000  # GPU thousandths in one GPU, as shares are counted


@dataclass(frozen=True)
class Resources:
    """GPUs (thousandths), cores and memory GiB: a demand, a capacity or what stands idle."""

    gpu_milli: int = 0
    cores: int = 0
    memory_gib: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            self.gpu_milli + other.gpu_milli,
            self.cores + other.cores,
            self.memory_gib + other.memory_gib,
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            self.gpu_milli - other.gpu_milli,
            self.cores - other.cores,
            self.memory_gib - other.memory_gib,
        )

    def fits_in(self, room: Resources) -> bool:
        return (
            self.gpu_milli <= room.gpu_milli
            and self.cores <= room.cores
            and self.memory_gib <= room.memory_gib
        )

    @property
    def gpus(self) -> float:
        return self.gpu_milli / MILLI


@dataclass(frozen=True)
class Shape:
    """A fixed-ratio server: `gpu_model` blank takes GPUs of any model; a model name takes
    GPUs whose model contains it (case aside: "V100" takes "Tesla V100-SXM2-32GB")."""

    name: str
    gpus: int
    cores: int
    memory_gib: int
    gpu_model: str = ""

    @property
    def capacity(self) -> Resources:
        return Resources(self.gpus * MILLI, self.cores, self.memory_gib)

    def takes_models(self, models: frozenset[str]) -> bool:
        if not self.gpu_model:
            return True
        wanted = self.gpu_model.casefold()
        return all(wanted in model.casefold() for model in models)


@dataclass(frozen=True)
class Run:
    """One composition as it ran: `start` to `end` (clipped to the period), the most it held
    at once (`demand`), and the models of its GPUs."""

    key: int
    name: str
    start: datetime
    end: datetime
    demand: Resources
    gpu_models: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Held:
    """One thing a composition held from `start` until `end` (None: still held)."""

    start: datetime
    end: datetime | None
    amount: Resources


@dataclass
class _Server:
    shape: Shape
    used: Resources = field(default_factory=Resources)
    runs: int = 0
    dedicated: bool = False

    @property
    def room(self) -> Resources:
        return self.shape.capacity - self.used


@dataclass(frozen=True)
class Result:
    """The replay's answer; averages are over the whole period, weighted by time."""

    servers_at_peak: int
    peak_at: datetime | None
    by_shape_at_peak: dict[str, int]
    capacity_at_peak: Resources
    used_at_peak: Resources
    idle_at_peak: Resources
    servers_average: float
    idle_average: tuple[float, float, float]  # GPUs, cores, memory GiB
    composable_peak: Resources  # each resource at its own peak
    composable_average: tuple[float, float, float]
    runs: int
    split_runs: int
    unplaced: tuple[str, ...]


def peak_held(held: Iterable[Held], *, until: datetime) -> Resources:
    """The most of each resource held at once, over things held at different times (a
    device replaced by a heal, one added by a resize): a sweep, releases first at a tie."""
    events: list[tuple[datetime, int, Resources]] = []
    for item in held:
        end = item.end if item.end is not None else until
        if end <= item.start:
            continue
        events.append((item.start, 1, item.amount))
        events.append((end, 0, item.amount))
    events.sort(key=lambda e: (e[0], e[1]))
    now, peak = Resources(), Resources()
    for _, arriving, amount in events:
        now = now + amount if arriving else now - amount
        peak = Resources(
            max(peak.gpu_milli, now.gpu_milli),
            max(peak.cores, now.cores),
            max(peak.memory_gib, now.memory_gib),
        )
    return peak


def _servers_for(run: Run, shape: Shape) -> int | None:
    """How many whole servers of `shape` the run needs on its own (None: it cannot go there)."""
    if not shape.takes_models(run.gpu_models):
        return None
    need = []
    for asked, has in (
        (run.demand.gpu_milli, shape.gpus * MILLI),
        (run.demand.cores, shape.cores),
        (run.demand.memory_gib, shape.memory_gib),
    ):
        if asked and not has:
            return None
        need.append(math.ceil(asked / has) if asked else 0)
    return max(1, *need)


def _waste(room: Resources, shape: Shape) -> float:
    """The room left on a server as a share of its shape, summed: smaller is a tighter fit."""
    cap = shape.capacity
    return sum(
        left / whole
        for left, whole in (
            (room.gpu_milli, cap.gpu_milli),
            (room.cores, cap.cores),
            (room.memory_gib, cap.memory_gib),
        )
        if whole
    )


def _split(demand: Resources, n: int) -> list[Resources]:
    """`demand` charged on `n` servers as evenly as whole units allow."""

    def parts(total: int) -> list[int]:
        base, extra = divmod(total, n)
        return [base + (1 if i < extra else 0) for i in range(n)]

    return [
        Resources(g, c, m)
        for g, c, m in zip(
            parts(demand.gpu_milli), parts(demand.cores), parts(demand.memory_gib), strict=True
        )
    ]


class _Fleet:
    """The servers open during the sweep and where each run sits."""

    def __init__(self, shapes: Sequence[Shape]) -> None:
        self.shapes = sorted(shapes, key=lambda s: (s.gpus, s.cores, s.memory_gib, s.name))
        self.servers: dict[int, _Server] = {}
        self.placed: dict[int, list[tuple[int, Resources]]] = {}
        self.next_id = 0
        self.split = 0

    def _open(self, shape: Shape, *, dedicated: bool = False) -> int:
        self.next_id += 1
        self.servers[self.next_id] = _Server(shape, dedicated=dedicated)
        return self.next_id

    def _put(self, server_id: int, run: Run, amount: Resources) -> None:
        server = self.servers[server_id]
        server.used = server.used + amount
        server.runs += 1
        self.placed.setdefault(run.key, []).append((server_id, amount))

    def arrive(self, run: Run) -> bool:
        """Place `run`; False when no chosen shape can hold it."""
        fitting = [
            (server_id, _waste(server.room - run.demand, server.shape))
            for server_id, server in self.servers.items()
            if not server.dedicated
            and server.shape.takes_models(run.gpu_models)
            and run.demand.fits_in(server.room)
        ]
        if fitting:
            best = min(fitting, key=lambda f: (f[1], f[0]))[0]
            self._put(best, run, run.demand)
            return True
        for shape in self.shapes:  # the smallest shape that holds it alone
            if _servers_for(run, shape) == 1:
                self._put(self._open(shape), run, run.demand)
                return True
        options = [(n, shape) for shape in self.shapes if (n := _servers_for(run, shape))]
        if not options:
            return False
        n, shape = min(options, key=lambda o: (o[0] * o[1].gpus, o[0], o[1].name))
        self.split += 1
        for amount in _split(run.demand, n):
            self._put(self._open(shape, dedicated=True), run, amount)
        return True

    def leave(self, run: Run) -> None:
        for server_id, amount in self.placed.pop(run.key, []):
            server = self.servers[server_id]
            server.used = server.used - amount
            server.runs -= 1
            if server.runs == 0:
                del self.servers[server_id]

    def capacity(self) -> Resources:
        total = Resources()
        for server in self.servers.values():
            total = total + server.shape.capacity
        return total


def replay(
    runs: Sequence[Run], shapes: Sequence[Shape], *, start: datetime, end: datetime
) -> Result:
    """Replay `runs` (already clipped to `start`..`end`) onto servers of `shapes`."""
    if not shapes:
        raise ValueError("at least one shape")
    fleet = _Fleet(shapes)
    events: list[tuple[datetime, int, int, Run]] = []
    for run in runs:
        if run.end > run.start:
            events.append((run.start, 1, run.key, run))
            events.append((run.end, 0, run.key, run))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    length = (end - start).total_seconds()
    demand = Resources()
    best = _Peak()
    composable_peak = Resources()
    area = _Area()
    unplaced: list[str] = []
    placed: set[int] = set()
    last = start
    for at, arriving, _, run in events:
        area.add((at - last).total_seconds(), fleet, demand)
        last = at
        if arriving:
            if not fleet.arrive(run):
                unplaced.append(run.name)
                continue
            placed.add(run.key)
            demand = demand + run.demand
            composable_peak = Resources(
                max(composable_peak.gpu_milli, demand.gpu_milli),
                max(composable_peak.cores, demand.cores),
                max(composable_peak.memory_gib, demand.memory_gib),
            )
            best.consider(at, fleet, demand)
        elif run.key in placed:
            fleet.leave(run)
            demand = demand - run.demand
    area.add((end - last).total_seconds(), fleet, demand)
    capacity = best.capacity
    return Result(
        servers_at_peak=best.count,
        peak_at=best.at,
        by_shape_at_peak=best.by_shape,
        capacity_at_peak=capacity,
        used_at_peak=best.used,
        idle_at_peak=capacity - best.used,
        servers_average=area.servers / length if length > 0 else 0.0,
        idle_average=area.idle(length),
        composable_peak=composable_peak,
        composable_average=area.used(length),
        runs=len(placed) + len(unplaced),
        split_runs=fleet.split,
        unplaced=tuple(unplaced),
    )


def _idle_share(capacity: Resources, used: Resources) -> float:
    """Idle GPUs, cores and memory as shares of what is installed, summed."""
    return sum(
        (whole - taken) / whole
        for whole, taken in (
            (capacity.gpu_milli, used.gpu_milli),
            (capacity.cores, used.cores),
            (capacity.memory_gib, used.memory_gib),
        )
        if whole
    )


@dataclass
class _Peak:
    """The moment the most servers were open (the fullest such moment, the first of equals),
    and what they held then."""

    count: int = 0
    at: datetime | None = None
    by_shape: dict[str, int] = field(default_factory=dict)
    capacity: Resources = field(default_factory=Resources)
    used: Resources = field(default_factory=Resources)

    def consider(self, at: datetime, fleet: _Fleet, demand: Resources) -> None:
        count, capacity = len(fleet.servers), fleet.capacity()
        if count < self.count or count == 0:
            return
        if count == self.count and _idle_share(capacity, demand) >= _idle_share(
            self.capacity, self.used
        ):
            return
        self.count, self.at, self.used, self.capacity = count, at, demand, capacity
        self.by_shape = {}
        for server in fleet.servers.values():
            name = server.shape.name
            self.by_shape[name] = self.by_shape.get(name, 0) + 1


@dataclass
class _Area:
    """Time integrals (seconds x amount) of servers open, their capacity and the demand."""

    servers: float = 0.0
    capacity: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    demand: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])

    def add(self, seconds: float, fleet: _Fleet, demand: Resources) -> None:
        if seconds <= 0:
            return
        cap = fleet.capacity()
        self.servers += seconds * len(fleet.servers)
        for i, (c, d) in enumerate(
            (
                (cap.gpu_milli / MILLI, demand.gpu_milli / MILLI),
                (cap.cores, demand.cores),
                (cap.memory_gib, demand.memory_gib),
            )
        ):
            self.capacity[i] += seconds * c
            self.demand[i] += seconds * d

    def idle(self, length: float) -> tuple[float, float, float]:
        if length <= 0:
            return (0.0, 0.0, 0.0)
        g, c, m = (cap - dem for cap, dem in zip(self.capacity, self.demand, strict=True))
        return (g / length, c / length, m / length)

    def used(self, length: float) -> tuple[float, float, float]:
        if length <= 0:
            return (0.0, 0.0, 0.0)
        g, c, m = self.demand
        return (g / length, c / length, m / length)
