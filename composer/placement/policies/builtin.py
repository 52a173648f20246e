"""The placement policies the product ships, each declared once and registered here.

Selectable (a request's failure-domain `policy`): "none", "enclosure" and "switch" (spread
each item's devices so that no two share an enclosure / a switch; an enclosure dual-homed
to two switches counts as behind both), "pack". Switched on by a request flag: same switch
("same_switch") and critical isolation ("critical"). A new policy is a subclass of `Policy`
here, registered below (docs/placement.md, "Adding a policy").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set

from composer.placement.policies.base import (
    CORE_FIT_WEIGHT,
    EnclosureKey,
    Items,
    PerEnclosure,
    Policy,
    fits,
    register,
    selected,
)
from composer.placement.request import PlacementRequest
from composer.placement.snapshot import DeviceInfo, HostInfo, Snapshot

__all__ = ["CRITICAL", "ENCLOSURE", "NONE", "PACK", "SAME_SWITCH", "SWITCH"]


class NoPreference(Policy):
    """The default: one enclosure when one holds an item, else fragments first."""

    name = "none"
    label = "No preference"
    help = "one enclosure when one holds the item, else the smallest free blocks first"
    ranks_by_fragmentation = True
    menu_rank = 0


class Spread(Policy):
    """No two devices of an item share a domain: an enclosure, or a switch."""

    check = "domain"

    def __init__(self, domain: str) -> None:
        self.name = self.one_domain = domain
        self.domains = "switches" if domain == "switch" else f"{domain}s"
        self.label = f"Spread across {self.domains}"
        self.words = self.spare_words = f"spread across {self.domains}"
        self.relax = f"'{self.words}'"
        article = "a" if domain == "switch" else "an"
        self.help = f"no two devices of an item share {article} {domain}"
        self.one_per_switch = domain == "switch"
        self.menu_rank = 1 if domain == "switch" else 2

    def per_switch(
        self, snapshot: Snapshot, items: Items, members: Set[str] | None
    ) -> dict[str, list[int]]:
        """One device per enclosure behind each switch ("enclosure"), one in all ("switch")."""
        enclosures = snapshot.enclosures
        one = self.one_per_switch
        totals: dict[str, list[int]] = {}
        for index, (_, found) in enumerate(items):
            for enclosure in found:
                if members is not None and enclosure not in members:
                    continue
                for switch in enclosures[enclosure].switches:
                    row = totals.setdefault(switch, [0] * len(items))
                    row[index] = 1 if one else row[index] + 1
        return totals

    def spread_counts(self, snapshot: Snapshot, items: Items, members: Set[str]) -> list[int]:
        """Per item, across how many enclosures or switches of `members` it is free."""
        enclosures = snapshot.enclosures
        counts = []
        for _, found in items:
            seen = [e for e in found if e in members]
            if not self.one_per_switch:
                counts.append(len(seen))
            else:
                counts.append(len({s for e in seen for s in enclosures[e].switches}))
        return counts

    def group_fits(
        self, request: PlacementRequest, snapshot: Snapshot, items: Items, members: Set[str]
    ) -> bool:
        """Enough distinct domains for each item (behind one switch, under same switch)."""
        if request.same_switch:
            per_switch = self.per_switch(snapshot, items, members)
            return any(fits(counts, items) for counts in per_switch.values())
        return fits(self.spread_counts(snapshot, items, members), items)

    def choose(
        self,
        count: int,
        per_enclosure: PerEnclosure,
        order: EnclosureKey,
        switches_of: Callable[[str], tuple[str, ...]],
    ) -> list[DeviceInfo] | None:
        """The first device of the best-ranked enclosures, one per enclosure (or switch)."""
        keys = {e: order(e) for e in per_enclosure}
        ranked = sorted(per_enclosure, key=keys.__getitem__)
        if not self.one_per_switch:
            if len(ranked) < count:
                return None
            return [per_enclosure[e][0] for e in ranked[:count]]
        chosen: list[DeviceInfo] = []
        used: set[str] = set()
        for enclosure in ranked:
            switches = switches_of(enclosure)
            if used.intersection(switches):
                continue
            used.update(switches)
            chosen.append(per_enclosure[enclosure][0])
            if len(chosen) == count:
                return chosen
        return None

    def spare_excluded(
        self, enclosure: str, switches: Set[str], taken: Set[str], taken_switches: Set[str]
    ) -> bool:
        """A spare may not share an enclosure (or a switch) with the item's kept devices."""
        if self.one_per_switch:
            return bool(switches & taken_switches)
        return enclosure in taken


class Pack(Policy):
    """As few enclosures as possible, and hosts filled rather than spread."""

    name = "pack"
    label = "Pack onto as few hosts and enclosures as possible"
    help = "as few enclosures as possible; hosts filled, the snuggest core fit first"
    spreads_hosts = False
    menu_rank = 3

    def _fragments_key(
        self, per_enclosure: PerEnclosure, keys: Mapping[str, tuple[float, ...]]
    ) -> Callable[[str], tuple[object, ...]]:
        """The biggest blocks first: the fewest enclosures."""
        return lambda e: (-len(per_enclosure[e]), keys[e])

    def core_fit(self, idle: float) -> float:
        """The fullest host that fits first: the cores left idle weigh."""
        return CORE_FIT_WEIGHT * idle

    def tenant_host_penalty(self, request: PlacementRequest, host: HostInfo) -> float:
        """Packing welcomes the tenant's own hosts."""
        return 0.0

    def host_words(self, request: PlacementRequest, host: HostInfo) -> str:
        return "pack: the snuggest core fit"


class SameSwitch(Policy):
    """Every device of the request's items behind one switch (memory and storage exempt:
    memory boxes and JBOFs hang off the spines)."""

    name = "same_switch"
    label = "All devices behind one switch"
    help = "every device of the items behind one switch"
    words = "behind one switch"
    relax = "'same switch'"
    spare_words = "behind the switch the other devices share"
    selectable = False
    flag = "same_switch"
    check = "switch"
    reason = "same switch"

    def clashing_item(self, policy: Policy, counts: Sequence[int]) -> int | None:
        """The first item (by index, of `counts` devices each) that `policy` gives a switch
        per device while same switch wants all behind one, or None: an item of one device
        meets both."""
        if not policy.one_per_switch:
            return None
        return next((i for i, count in enumerate(counts) if count > 1), None)

    def conflict(self, request: PlacementRequest) -> str | None:
        """A policy that gives each device a switch of its own cannot also put them all
        behind one."""
        policy = selected(request)
        spread = self.clashing_item(policy, [item.count for item in request.items])
        if spread is None:
            return None
        return (
            f"policy '{policy.name}' puts each of items[{spread}]'s devices behind its own "
            "switch, same_switch all of them behind one; choose one."
        )

    def conflict_words(self, policy: Policy) -> str:
        """The same conflict in the console's words (a spec's error on `policy`)."""
        return (
            f"{policy.label} puts each device behind a switch of its own; it cannot go with "
            "all devices behind one switch. Choose one of the two."
        )

    def group_fits(
        self, request: PlacementRequest, snapshot: Snapshot, items: Items, members: Set[str]
    ) -> bool:
        """One switch behind which every item fits."""
        per_switch = self.per_switch(snapshot, items, members)
        return any(fits(counts, items) for counts in per_switch.values())


class CriticalIsolation(Policy):
    """A critical request shares no switch or enclosure with another tenant (host switches
    included); no request enters a switch or enclosure another tenant holds critically."""

    name = "critical"
    label = "Critical: share no switch or enclosure with another tenant"
    help = "share no switch or enclosure with another tenant"
    spare_words = "sharing no switch or enclosure with another tenant"
    selectable = False
    flag = "critical"

    def blocked(self, request: PlacementRequest, snapshot: Snapshot) -> Set[str]:
        """For a critical request, what any other tenant holds something in; for any
        request, what another tenant holds critically."""
        if not snapshot.holders and not snapshot.critical:
            return frozenset()
        tenant = request.tenant
        blocked = {d for d, owner in snapshot.critical.items() if owner != tenant}
        if request.critical:
            blocked.update(
                d for d, tenants in snapshot.holders.items() if any(t != tenant for t in tenants)
            )
        return blocked


NONE = register(NoPreference())
ENCLOSURE = register(Spread("enclosure"))
SWITCH = register(Spread("switch"))
PACK = register(Pack())
SAME_SWITCH = register(SameSwitch())
CRITICAL = register(CriticalIsolation())
