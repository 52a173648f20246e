"""Which host-enclosure pairs lose reachability when some nodes and links fail.

Reachability (ignoring latency) is connectivity through switches: a host reaches an
enclosure when one of the host's uplinks and one of the enclosure's uplinks land in the
same connected component of the switch graph (or one link joins them directly). So the
fabric is indexed once per graph (`reach_index`, memoised on the graph): the components of
the switch graph and which hosts and enclosures attach to each.

A failure then only re-computes the switch components (when switches or inter-switch
links fail: a few hundred union-find steps) and looks at the *touched* hosts and
enclosures: failed ones, those with a failed uplink or uplink switch, and those attached to
a component that split. A pair of untouched ends keeps its component, so every lost pair
has a touched end; for each touched end the lost partners are a set difference of
precomputed sets. That keeps a single-domain blast radius in milliseconds at 10,000
devices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabric.topology.graph import LINK_DOWN, FabricGraph

__all__ = ["LostReach", "ReachIndex", "lost_reach", "reach_index"]

ENDS = ("host", "enclosure")


@dataclass
class ReachIndex:
    """The intact fabric's reachability, by switch component. Built once per graph."""

    switches: frozenset[str]
    comp: dict[str, str]  # switch -> its component (a switch id)
    comp_switches: dict[str, list[str]]  # component -> its switches
    switch_links: list[tuple[str, str, str]]  # (link, switch, switch), usable
    switch_link_ids: frozenset[str]
    # host or enclosure -> its usable uplinks: (link, switch, or None for a direct link)
    attach: dict[str, list[tuple[str, str | None]]]
    comps: dict[str, frozenset[str]]  # host or enclosure -> components (direct link: its id)
    members: dict[str, dict[str, frozenset[str]]]  # component -> {"host": .., "enclosure": ..}
    switch_ends: dict[str, list[str]]  # switch -> hosts and enclosures cabled to it
    link_ends: dict[str, list[str]]  # uplink -> the hosts and enclosures it serves
    kinds: dict[str, str]  # host or enclosure -> its kind
    device_count: dict[str, int]  # enclosure -> its devices
    _partners: dict[str, frozenset[str]] = field(default_factory=dict)

    def partners(self, end: str) -> frozenset[str]:
        """What `end` reaches in the intact fabric: a host's enclosures or an enclosure's
        hosts."""
        known = self._partners.get(end)
        if known is None:
            other = "enclosure" if self.kinds[end] == "host" else "host"
            sets = [self.members[c][other] for c in self.comps.get(end, ())]
            known = sets[0] if len(sets) == 1 else frozenset().union(*sets)
            self._partners[end] = known
        return known


def reach_index(graph: FabricGraph) -> ReachIndex:
    """The ReachIndex of `graph`, built on first use and kept on the graph."""
    return graph.memo("reach.index", lambda: _build(graph))


def _build(graph: FabricGraph) -> ReachIndex:
    nodes = graph.nodes
    switches = frozenset(n.id for n in nodes.values() if n.kind == "switch")
    parent = {s: s for s in switches}

    def find(s: str) -> str:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    switch_links: list[tuple[str, str, str]] = []
    attach: dict[str, list[tuple[str, str | None]]] = {
        n.id: [] for n in nodes.values() if n.kind in ENDS
    }
    switch_ends: dict[str, list[str]] = defaultdict(list)
    link_ends: dict[str, list[str]] = defaultdict(list)
    for edge in graph.edges.values():
        if edge.state == LINK_DOWN or edge.a == edge.b:
            continue
        a_switch, b_switch = edge.a in switches, edge.b in switches
        if a_switch and b_switch:
            switch_links.append((edge.id, edge.a, edge.b))
            parent[find(edge.a)] = find(edge.b)
        elif a_switch or b_switch:
            switch, end = (edge.a, edge.b) if a_switch else (edge.b, edge.a)
            if end in attach:
                attach[end].append((edge.id, switch))
                switch_ends[switch].append(end)
                link_ends[edge.id].append(end)
        elif nodes[edge.a].kind != nodes[edge.b].kind and edge.a in attach and edge.b in attach:
            for end in (edge.a, edge.b):  # a host cabled straight to an enclosure
                attach[end].append((edge.id, None))
                link_ends[edge.id].append(end)
    comp = {s: find(s) for s in switches}
    comp_switches: dict[str, list[str]] = defaultdict(list)
    for s, root in comp.items():
        comp_switches[root].append(s)
    kinds = {end: nodes[end].kind for end in attach}
    comps: dict[str, frozenset[str]] = {}
    grouped: dict[str, dict[str, set[str]]] = defaultdict(
        lambda: {"host": set(), "enclosure": set()}
    )
    for end, uplinks in attach.items():
        mine = frozenset(link if switch is None else comp[switch] for link, switch in uplinks)
        comps[end] = mine
        for c in mine:
            grouped[c][kinds[end]].add(end)
    members = {c: {k: frozenset(v) for k, v in sets.items()} for c, sets in grouped.items()}
    device_count = {
        end: len(graph.devices_in(end)) for end, kind in kinds.items() if kind == "enclosure"
    }
    return ReachIndex(
        switches=switches,
        comp=comp,
        comp_switches=dict(comp_switches),
        switch_links=switch_links,
        switch_link_ids=frozenset(link for link, _, _ in switch_links),
        attach=attach,
        comps=comps,
        members=members,
        switch_ends=dict(switch_ends),
        link_ends=dict(link_ends),
        kinds=kinds,
        device_count=device_count,
    )


@dataclass
class LostReach:
    """What a failure does to reachability.

    `unreachable`: host -> enclosures it reached before and no longer does (a failed host
    loses everything it reached). `lost_by`: enclosure -> hosts that no longer reach it.
    `uplinks`: touched hosts -> (usable uplinks before, after).
    """

    unreachable: dict[str, frozenset[str]]
    lost_by: dict[str, set[str]]
    uplinks: dict[str, tuple[int, int]]


def lost_reach(
    index: ReachIndex, failed_nodes: set[str] | frozenset[str], failed_links: Iterable[str]
) -> LostReach:
    """The pairs that lose reachability when `failed_nodes` and `failed_links` fail together.

    A link at a failed node counts as failed whether or not it is listed.
    """
    failed_links = set(failed_links)
    failed_switches = failed_nodes & index.switches
    comp, kinds = index.comp, index.kinds

    # The switch components after the failure; `single[c]` is a component's one successor.
    split: set[str] = set()
    if failed_switches or failed_links & index.switch_link_ids:
        parent = {s: s for s in index.switches if s not in failed_switches}

        def find(s: str) -> str:
            while parent[s] != s:
                parent[s] = parent[parent[s]]
                s = parent[s]
            return s

        for link, a, b in index.switch_links:
            if link not in failed_links and a in parent and b in parent:
                parent[find(a)] = find(b)
        after = {s: find(s) for s in parent}
        successors: dict[str, set[str]] = defaultdict(set)
        for s, root in after.items():
            successors[comp[s]].add(root)
        split = {c for c, roots in successors.items() if len(roots) > 1}
        single = {c: next(iter(roots)) for c, roots in successors.items() if len(roots) == 1}
    else:
        after = comp
        single = {c: c for c in index.comp_switches}

    touched: set[str] = {n for n in failed_nodes if n in kinds}
    for link in failed_links:
        touched.update(index.link_ends.get(link, ()))
    for s in failed_switches:
        touched.update(index.switch_ends.get(s, ()))
    for c in split:
        for s in index.comp_switches[c]:
            touched.update(index.switch_ends.get(s, ()))

    comps_after: dict[str, set[str]] = {}
    uplinks: dict[str, tuple[int, int]] = {}
    for end in touched:
        mine: set[str] = set()
        if end not in failed_nodes:
            for link, switch in index.attach[end]:
                if link in failed_links:
                    continue
                if switch is None:
                    mine.add(link)
                elif switch not in failed_switches:
                    mine.add(after[switch])
        comps_after[end] = mine
        if kinds[end] == "host":
            usable = sum(
                1
                for link, switch in index.attach[end]
                if end not in failed_nodes
                and link not in failed_links
                and switch not in failed_switches
            )
            uplinks[end] = (len(index.attach[end]), usable)

    # Who left each surviving component; who makes up the components of a split one.
    removed: dict[str, set[str]] = defaultdict(set)
    split_members: dict[str, dict[str, set[str]]] = defaultdict(
        lambda: {"host": set(), "enclosure": set()}
    )
    for end, mine in comps_after.items():
        for c in index.comps.get(end, ()):
            if c in split:
                continue
            successor = c if c not in comp else single.get(c)
            if successor is None or successor not in mine:
                removed[c].add(end)
        for a in mine:
            if a in comp and comp[a] in split:
                split_members[a][kinds[end]].add(end)

    def members_after(a: str, kind: str) -> frozenset[str] | set[str]:
        if a in comp and comp[a] in split:
            return split_members[a][kind]
        before = comp.get(a, a)
        base = index.members[before][kind]
        gone = removed.get(before)
        return base - gone if gone else base

    unreachable_parts: dict[str, list[frozenset[str]]] = defaultdict(list)
    lost_by: dict[str, set[str]] = defaultdict(set)
    host_groups: dict[frozenset[str], list[str]] = defaultdict(list)
    enclosure_groups: dict[frozenset[str], list[str]] = defaultdict(list)
    for end, mine in comps_after.items():
        other = "enclosure" if kinds[end] == "host" else "host"
        reached = [members_after(a, other) for a in mine]
        before = index.partners(end)
        lost = frozenset(before.difference(*reached)) if reached else before
        if lost:
            (host_groups if other == "enclosure" else enclosure_groups)[lost].append(end)
    for lost, hosts in host_groups.items():
        for host in hosts:
            unreachable_parts[host].append(lost)
        for enclosure in lost:
            lost_by[enclosure].update(hosts)
    for lost, enclosures in enclosure_groups.items():
        group = frozenset(enclosures)
        for enclosure in enclosures:
            lost_by[enclosure].update(lost)
        for host in lost:
            unreachable_parts[host].append(group)
    unreachable = {
        host: parts[0] if len(parts) == 1 else frozenset().union(*parts)
        for host, parts in unreachable_parts.items()
    }
    return LostReach(unreachable=unreachable, lost_by=dict(lost_by), uplinks=uplinks)
