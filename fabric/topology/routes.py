"""Which host-enclosure pairs keep their reach but lose one of their shortest routes.

A pair (host, enclosure) is *degraded* by a failure when the host still reaches the
enclosure (see reach.py) but a failed switch or link lay on one of the pair's fewest-hop
routes: the pair lost an equal-cost route (redundancy, bandwidth) or, when all of them are
gone, now takes a longer one. A route elsewhere in the fabric failing changes nothing for
it: a host reaching a GPU chassis through its own leaf is not degraded by a spine failure,
while a host in the other rack, whose routes to that chassis cross the spines, is.

Hop distances are indexed once per graph (`route_index`, memoised): each end (host or
enclosure) has a *signature*, the set of switches it is cabled to (every host under one
leaf shares one), and the distances from a signature to every switch are one breadth-first
search over the switch graph, made on first need. A route between a host of signature H
and an enclosure of signature E runs host - s - ... - t - enclosure (s in H, t in E) and
crosses D = min over s in H of dist_E[s] switch-to-switch links. So:

- a failed switch w lies on a shortest route iff dist_H[w] + dist_E[w] == D;
- a failed link between switches a and b iff dist_H[a] + 1 + dist_E[b] == D (or b, a);
- a failed uplink of the host to switch s iff dist_E[s] == D, of the enclosure to t iff
  dist_H[t] == D.

A failure is therefore judged per pair of signatures in the switch components it touches,
not per pair of ends, and the answer comes as blocks (hosts x enclosures). A host cabled
straight to an enclosure (no switch) has that link as its only shortest route to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabric.topology.elements import FabricGraph
from fabric.topology.reach import LostReach, ReachIndex, reach_index

__all__ = ["DegradedRoutes", "RouteIndex", "degraded_routes", "route_index"]

FAR = 1 << 30  # "not reachable": larger than any hop count


@dataclass
class RouteIndex:
    """Hop distances over the intact switch graph, by signature. Built once per graph."""

    reach: ReachIndex
    neighbours: dict[str, list[str]]  # switch -> switches one usable link away
    switch_link_ends: dict[str, tuple[str, str]]  # switch-to-switch link -> its switches
    signature: dict[str, frozenset[str]]  # host or enclosure -> the switches it is cabled to
    direct: dict[str, dict[str, frozenset[str]]]  # end -> end cabled straight to it -> links
    _distances: dict[frozenset[str], dict[str, int]] = field(default_factory=dict)
    _shortest: dict[tuple[frozenset[str], frozenset[str]], int] = field(default_factory=dict)
    _groups: dict[str, dict[str, dict[frozenset[str], frozenset[str]]]] = field(
        default_factory=dict
    )

    def distances(self, sources: frozenset[str]) -> dict[str, int]:
        """Links from the nearest switch of `sources` to every switch it reaches."""
        known = self._distances.get(sources)
        if known is None:
            known = dict.fromkeys(sources, 0)
            frontier = list(sources)
            hops = 0
            while frontier:
                hops += 1
                following = []
                for switch in frontier:
                    for neighbour in self.neighbours.get(switch, ()):
                        if neighbour not in known:
                            known[neighbour] = hops
                            following.append(neighbour)
                frontier = following
            self._distances[sources] = known
        return known

    def shortest(self, hosts: frozenset[str], enclosures: frozenset[str]) -> int:
        """Switch-to-switch links on the shortest route between two signatures (FAR: none)."""
        key = (hosts, enclosures)
        known = self._shortest.get(key)
        if known is None:
            to_enclosure = self.distances(enclosures)
            known = self._shortest[key] = min(
                (to_enclosure.get(s, FAR) for s in hosts), default=FAR
            )
        return known

    def groups(self, component: str) -> dict[str, dict[frozenset[str], frozenset[str]]]:
        """The hosts and enclosures attached to a switch component, grouped by signature:
        {"host": {signature: hosts}, "enclosure": {signature: enclosures}}."""
        known = self._groups.get(component)
        if known is None:
            known = {}
            for kind in ("host", "enclosure"):
                by_signature: dict[frozenset[str], set[str]] = defaultdict(set)
                for end in self.reach.members.get(component, {}).get(kind, ()):
                    by_signature[self.signature[end]].add(end)
                known[kind] = {sig: frozenset(ends) for sig, ends in by_signature.items()}
            self._groups[component] = known
        return known


def route_index(graph: FabricGraph) -> RouteIndex:
    """The RouteIndex of `graph`, built on first use and kept on the graph."""
    return graph.memo("routes.index", lambda: _build(graph))


def _build(graph: FabricGraph) -> RouteIndex:
    index = reach_index(graph)
    neighbours: dict[str, list[str]] = defaultdict(list)
    switch_link_ends: dict[str, tuple[str, str]] = {}
    for link, a, b in index.switch_links:
        neighbours[a].append(b)
        neighbours[b].append(a)
        switch_link_ends[link] = (a, b)
    signature: dict[str, frozenset[str]] = {}
    direct_links: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for end, uplinks in index.attach.items():
        signature[end] = frozenset(switch for _, switch in uplinks if switch is not None)
        for link, switch in uplinks:
            if switch is None:
                for other in index.link_ends.get(link, ()):
                    if other != end:
                        direct_links[end][other].add(link)
    direct = {
        end: {other: frozenset(links) for other, links in others.items()}
        for end, others in direct_links.items()
    }
    return RouteIndex(
        reach=index,
        neighbours=dict(neighbours),
        switch_link_ends=switch_link_ends,
        signature=signature,
        direct=direct,
    )


@dataclass
class DegradedRoutes:
    """Pairs that lose a shortest route, as blocks: every host of a block reaches every
    enclosure of it over fewer shortest routes than before — unless the pair is lost
    altogether (LostReach says so; lost wins)."""

    blocks: list[tuple[frozenset[str], frozenset[str]]]

    def by_host(self) -> dict[str, frozenset[str]]:
        """host -> enclosures of its blocks (a host in one block shares the block's set)."""
        return _grouped((hosts, enclosures) for hosts, enclosures in self.blocks)

    def by_enclosure(self) -> dict[str, frozenset[str]]:
        """enclosure -> hosts of its blocks."""
        return _grouped((enclosures, hosts) for hosts, enclosures in self.blocks)


def _grouped(
    pairs: Iterable[tuple[frozenset[str], frozenset[str]]],
) -> dict[str, frozenset[str]]:
    """Each key of each pair's first set -> the union of the second sets it is paired with."""
    parts: dict[str, list[frozenset[str]]] = defaultdict(list)
    for keys, values in pairs:
        for key in keys:
            parts[key].append(values)
    return {
        key: sets[0] if len(sets) == 1 else frozenset().union(*sets) for key, sets in parts.items()
    }


def degraded_routes(
    graph: FabricGraph,
    failed_nodes: set[str] | frozenset[str],
    failed_links: Iterable[str],
    lost: LostReach,
) -> DegradedRoutes:
    """The pairs that still reach each other but lose a shortest route when `failed_nodes`
    and `failed_links` fail together (`lost`: what the same failure cuts, from reach.py).

    Failed hosts and enclosures take no part: what they lose is lost, not degraded.
    """
    routes = route_index(graph)
    index = routes.reach
    failed_links = set(failed_links)
    failed_switches = failed_nodes & index.switches
    cut_switch_links = [
        routes.switch_link_ends[link]
        for link in failed_links
        if link in routes.switch_link_ends
        and not failed_switches.intersection(routes.switch_link_ends[link])
    ]
    # Each surviving end's failed uplinks, by the switch they led to; straight links apart.
    cut_uplinks: dict[str, set[str]] = defaultdict(set)
    cut_direct: list[tuple[str, str]] = []
    for link in failed_links:
        for end in index.link_ends.get(link, ()):
            if end in failed_nodes:
                continue
            for uplink, switch in index.attach[end]:
                if uplink != link:
                    continue
                if switch is None:
                    cut_direct += [(end, other) for other in index.link_ends[link] if other != end]
                elif switch not in failed_switches:
                    cut_uplinks[end].add(switch)

    components = {index.comp[s] for s in failed_switches}
    components.update(index.comp[a] for a, _ in cut_switch_links)
    components.update(index.comp[s] for switches in cut_uplinks.values() for s in switches)
    if not components and not cut_direct:
        return DegradedRoutes([])

    blocks: list[tuple[frozenset[str], frozenset[str]]] = []
    across = bool(failed_switches or cut_switch_links)
    for component in sorted(components):
        groups = routes.groups(component)
        for host_sig, hosts in groups["host"].items():
            hosts = hosts - failed_nodes
            if not hosts:
                continue
            to_host = routes.distances(host_sig)
            for encl_sig, enclosures in groups["enclosure"].items():
                enclosures = enclosures - failed_nodes
                if not enclosures:
                    continue
                to_encl = routes.distances(encl_sig)
                best = routes.shortest(host_sig, encl_sig)
                if best >= FAR:
                    continue
                if across and _crosses(to_host, to_encl, best, failed_switches, cut_switch_links):
                    blocks.append((hosts, enclosures))
                    continue
                for host in hosts & cut_uplinks.keys():
                    if any(to_encl.get(s, FAR) == best for s in cut_uplinks[host]):
                        blocks.append((frozenset({host}), enclosures))
                for enclosure in enclosures & cut_uplinks.keys():
                    if any(to_host.get(t, FAR) == best for t in cut_uplinks[enclosure]):
                        blocks.append((hosts, frozenset({enclosure})))
    blocks = _without_direct(routes, blocks, failed_links)
    for end, other in cut_direct:
        host, enclosure = (end, other) if index.kinds[end] == "host" else (other, end)
        if enclosure not in lost.unreachable.get(host, ()):
            blocks.append((frozenset({host}), frozenset({enclosure})))
    return DegradedRoutes(blocks)


def _crosses(
    to_host: dict[str, int],
    to_encl: dict[str, int],
    best: int,
    failed_switches: frozenset[str] | set[str],
    cut_switch_links: list[tuple[str, str]],
) -> bool:
    """Whether a failed switch or switch-to-switch link lies on a shortest route."""
    for w in failed_switches:
        if to_host.get(w, FAR) + to_encl.get(w, FAR) == best:
            return True
    for a, b in cut_switch_links:
        if (
            to_host.get(a, FAR) + 1 + to_encl.get(b, FAR) == best
            or to_host.get(b, FAR) + 1 + to_encl.get(a, FAR) == best
        ):
            return True
    return False


def _without_direct(
    routes: RouteIndex, blocks: list[tuple[frozenset[str], frozenset[str]]], failed: set[str]
) -> list[tuple[frozenset[str], frozenset[str]]]:
    """`blocks` less the pairs still joined by a working straight link: their one shortest
    route is that link, which no switch failure touches."""
    if not routes.direct:
        return blocks
    kept: list[tuple[frozenset[str], frozenset[str]]] = []
    for hosts, enclosures in blocks:
        joined = {
            (host, other)
            for host in hosts & routes.direct.keys()
            for other, links in routes.direct[host].items()
            if other in enclosures and links - failed
        }
        if not joined:
            kept.append((hosts, enclosures))
            continue
        for host in hosts:
            mine = frozenset(e for e in enclosures if (host, e) not in joined)
            if mine:
                kept.append((frozenset({host}), mine))
    return kept
