"""The hosts a request may be built on: counted per reach group without a scan where
possible, and walked best ranked first (scoring.host_rank; the default policy by the GPUs a
placement fragments and strands, composer.placement.fragmentation). Pure Python; split out
of engine.py, which asks it at each step of a decision.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import chain, islice

import composer.placement.fragmentation as fragmentation
from composer.placement.request import PlacementRequest
from composer.placement.scoring import (
    CORE_FIT_WEIGHT,
    TENANT_HOST_PENALTY,
    group_balance,
    host_rank,
    spreads,
)
from composer.placement.shares import ShareWant, hold
from composer.placement.snapshot import HostInfo, Snapshot

__all__ = ["Hosts"]


class Hosts:
    """The hosts a request may be built on, counted per reach group without a scan where
    possible (each group's hosts are indexed by free cores), and walked best ranked first."""

    def __init__(self, request: PlacementRequest, snapshot: Snapshot, blocked: frozenset[str]):
        self.request, self.snapshot, self.blocked = request, snapshot, blocked
        self.simple = request.host is None and not request.host_memory_gib
        # Reach groups a share item limits to some of their hosts: those holding a partly
        # shared device with the share free, in a group that reaches no whole free device.
        self.only: dict[int, frozenset[str]] = {}
        # Hosts holding a partly shared device with a share item's share free: planned
        # first, so that shares fill devices already shared before whole ones are broken.
        self.first: set[str] = set()
        self._starts: dict[int, int] = {}

    def hold(self, want: ShareWant, groups: set[int]) -> None:
        """Limit the groups of `groups` that serve `want` only through partly shared
        devices to the hosts holding one with the share free (shares.hold)."""
        hold(self.snapshot, want, groups, self.only, self.first)

    def ok(self, host: HostInfo, *, isolate: bool = True) -> bool:
        request = self.request
        return (
            host.cores_free >= request.cores
            and host.memory_gib_free >= request.host_memory_gib
            and not (isolate and self.blocked and self.blocked.intersection(host.switches))
        )

    def _start(self, group: int) -> int:
        """Where the group's hosts with enough free cores start in `group_by_cores`
        (looked up once per group and decision: the engine counts groups at every step)."""
        start = self._starts.get(group)
        if start is None:
            cores = self.snapshot.group_cores_sorted[group]
            start = self._starts[group] = bisect_left(cores, self.request.cores)
        return start

    def _members(self, group: int) -> Iterator[str]:
        return islice(self.snapshot.group_by_cores[group], self._start(group), None)

    def count(self, groups: set[int], *, isolate: bool = True) -> int:
        """How many usable hosts the reach groups `groups` hold."""
        snapshot = self.snapshot
        limited = groups & self.only.keys() if self.only else None
        if limited:
            hosts = snapshot.hosts
            asked = self.request.host
            return sum(
                1
                for g in limited
                for h in self.only[g]
                if asked in (None, h) and self.ok(hosts[h], isolate=isolate)
            ) + self.count(groups - limited, isolate=isolate)
        if self.request.host is not None:
            host = snapshot.hosts[self.request.host]
            return int(snapshot.host_group[host.id] in groups and self.ok(host, isolate=isolate))
        if self.simple and not (isolate and self.blocked):
            by_cores = snapshot.group_by_cores
            return sum(len(by_cores[g]) - self._start(g) for g in groups)
        # `ok` written out (the free cores are the index's): this runs over every host.
        hosts, memory = snapshot.hosts, self.request.host_memory_gib
        blocked = self.blocked if isolate else frozenset()
        found = 0
        for g in groups:
            for h in self._members(g):
                host = hosts[h]
                if host.memory_gib_free >= memory and not (
                    blocked and blocked.intersection(host.switches)
                ):
                    found += 1
        return found

    def _limited(self, group: int, members: Iterator[str]) -> Iterator[str]:
        """`members` of `group`, only those a share item leaves when it limits the group."""
        only = self.only.get(group)
        return members if only is None else (h for h in members if h in only)

    def _most_free_first(self, group: int) -> Iterator[str]:
        """The group's hosts with enough free cores, most free cores first (ties by name,
        as in `group_by_cores`): its runs of equal free cores, from the last."""
        by, cores = self.snapshot.group_by_cores[group], self.snapshot.group_cores_sorted[group]
        start, end = self._start(group), len(by)
        while end > start:
            first = bisect_left(cores, cores[end - 1], start, end)
            yield from by[first:end]
            end = first

    def ranked(self, groups: set[int], gpus: int) -> Iterator[tuple[HostInfo, float]]:
        """Usable hosts of `groups`, best ranked first (scoring.host_rank), with their
        penalty: a merge of each group's hosts in free-core order (most free first when the
        request spreads, fewest when it packs), the tenant's own hosts moved back."""
        request, snapshot = self.request, self.snapshot
        hosts = snapshot.hosts
        if request.host is not None:
            host = hosts[request.host]
            group = snapshot.host_group[host.id]
            allowed = group not in self.only or host.id in self.only[group]
            if group in groups and allowed and self.ok(host):
                yield host, host_rank(request, snapshot, host, gpus)[0]
            return
        if fragmentation.applies(request):  # the default policy's ranking (fragmentation.py)
            yield from self._least_fragmenting(groups)
            return
        scale = CORE_FIT_WEIGHT / max(snapshot.max_cores, 1)
        spread = spreads(request)
        # core_fit, split into what is the same for every host and what is not.
        base = CORE_FIT_WEIGHT + scale * request.cores if spread else -scale * request.cores
        lanes = [
            _lane(
                group_balance(request, snapshot, group, gpus) + base,
                -scale if spread else scale,
                self._limited(
                    group, self._most_free_first(group) if spread else self._members(group)
                ),
                snapshot,
            )
            for group in sorted(groups)
        ]
        merged: Iterator[tuple[float, str, str]] = heapq.merge(*lanes)
        if spread and request.tenant_hosts:
            merged = _moved_back(merged, request.tenant_hosts, TENANT_HOST_PENALTY)
        front = sorted(
            (host_rank(request, snapshot, hosts[h], gpus)[0], hosts[h].name, h)
            for h in self.first
            if (g := snapshot.host_group[h]) in groups
            and h in self.only.get(g, (h,))
            and self.ok(hosts[h])
        )
        for penalty, _, host_id in front:
            yield hosts[host_id], penalty
        done = {host_id for *_, host_id in front}
        for penalty, _, host_id in merged:
            host = hosts[host_id]
            if host_id not in done and self.ok(host):
                yield host, penalty

    def _least_fragmenting(self, groups: set[int]) -> Iterator[tuple[HostInfo, float]]:
        """The default ranking: of each group the hosts holding a share item's partly shared
        device, then the snuggest core fits (and, for a share, the roomiest host: see
        `_roomiest`), measured (fragmentation.ranked) and walked least fragmenting first;
        the hosts not measured after them, group by group."""
        snapshot, hosts = self.snapshot, self.snapshot.hosts
        walks = {g: self._walk(g) for g in sorted(groups)}
        heads = {g: fragmentation.heads(walk, snapshot) for g, walk in walks.items()}
        if any(item.share for item in self.request.items):
            for group, measured_first in heads.items():
                roomiest = self._roomiest(group)
                if roomiest is not None and roomiest not in measured_first:
                    measured_first.append(roomiest)
        extra = dict.fromkeys(self.request.tenant_hosts, TENANT_HOST_PENALTY)
        measured = fragmentation.ranked(self.request, snapshot, heads.items(), extra)
        done = set()
        for penalty, *_, host_id in measured:
            done.add(host_id)
            yield hosts[host_id], penalty
        for group, walk in walks.items():
            for host_id in chain(heads[group], walk):
                if host_id not in done:
                    yield hosts[host_id], host_rank(self.request, snapshot, hosts[host_id], 0)[0]

    def _roomiest(self, group: int) -> str | None:
        """The group's usable host with the most free cores. A share on a whole GPU leaves
        the rest of that GPU bound to the host, usable only with cores left there: on the
        snuggest hosts alone the measure could only choose among hosts that strand it (the
        measured hosts of a share are each measured on their own cores: fragmentation.
        ranked)."""
        hosts = self.snapshot.hosts
        for host_id in self._limited(group, self._most_free_first(group)):
            if self.ok(hosts[host_id]):
                return host_id
        return None

    def _walk(self, group: int) -> Iterator[str]:
        """The group's usable hosts, snuggest core fit first (those holding a share item's
        partly shared device before them). Most requests ask nothing a host's free cores
        do not already say (no host memory, no isolation, no share item): then the group's
        index, as it stands, is the walk; without a share item, the index filtered."""
        members = islice(self.snapshot.group_by_cores[group], self._start(group), None)
        if self.first or group in self.only:
            hosts = self.snapshot.hosts
            return (h for h in self._candidates(group) if self.ok(hosts[h]))
        if self.simple and not self.blocked:
            return members
        return self._usable(members)

    def _usable(self, members: Iterable[str]) -> Iterator[str]:
        """`members` that pass `ok` (their free cores already do), `ok` written out."""
        hosts, memory, blocked = self.snapshot.hosts, self.request.host_memory_gib, self.blocked
        for h in members:
            host = hosts[h]
            if host.memory_gib_free >= memory and not (
                blocked and blocked.intersection(host.switches)
            ):
                yield h

    def _candidates(self, group: int) -> Iterator[str]:
        first = sorted(h for h in self.first if self.snapshot.host_group[h] == group)
        yield from self._limited(group, iter(first))
        yield from self._limited(group, (h for h in self._members(group) if h not in first))


def _lane(
    offset: float, scale: float, members: Iterable[str], snapshot: Snapshot
) -> Iterator[tuple[float, str, str]]:
    """One reach group's hosts as (penalty, name, id), lazily: the merge only ever reads
    the first few of each group, so building every host's tuple was wasted work."""
    hosts = snapshot.hosts
    for host_id in members:
        host = hosts[host_id]
        yield offset + scale * host.cores_free, host.name, host_id


def _moved_back(
    ranked: Iterable[tuple[float, str, str]], hosts: frozenset[str], extra: float
) -> Iterator[tuple[float, str, str]]:
    """`ranked` (best first) with the penalty of `hosts` raised by `extra`, still best
    first: each of those is held back until nothing better is left."""
    held: list[tuple[float, str, str]] = []
    for entry in ranked:
        if entry[2] in hosts:
            heapq.heappush(held, (entry[0] + extra, entry[1], entry[2]))
            continue
        while held and held[0] <= entry:
            yield heapq.heappop(held)
        yield entry
    while held:
        yield heapq.heappop(held)
