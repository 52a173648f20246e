"""A placement policy as one object, and the registry that holds them. Pure Python.

A `Policy` carries its words (the form's label, a line of help, how the explanation and a
rejection say it), its constraint (a check per reach group, the choice of devices on one
host, the switches and enclosures it keeps a request out of, the spares heal may not take)
and its score (how it ranks hosts and says why). The base class constrains nothing and
spreads compositions across hosts; a policy overrides what it changes.

The registry is the one list every reader goes through: the engine (validation, the group
checks and their funnel words, the pickers, the host ranking), the nearest-alternative
search, heal, the forms' choices, the API's enum and the spec's validation. `register`
adds a policy; `registered` does it for the length of a `with` block (tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from typing import TypeVar

from composer.placement.request import DeviceItem, PlacementRequest
from composer.placement.shared import Candidates
from composer.placement.snapshot import DeviceInfo, HostInfo, Snapshot

__all__ = [
    "CORE_FIT_WEIGHT",
    "NAMES",
    "TENANT_HOST_PENALTY",
    "EnclosureKey",
    "Items",
    "PerEnclosure",
    "Policy",
    "checking",
    "choice",
    "choices",
    "conflict",
    "enabled",
    "everyone",
    "fits",
    "flagged",
    "isolating",
    "named",
    "register",
    "registered",
    "selectable",
    "selected",
    "unregister",
]

CORE_FIT_WEIGHT = 15.0  # spread: the share of the host's cores taken; pack: left idle
TENANT_HOST_PENALTY = 12.0  # spread: the tenant already has a composition on the host

Items = Sequence[tuple[DeviceItem, Candidates]]
EnclosureKey = Callable[[str], tuple[float, ...]]
PerEnclosure = Mapping[str, Sequence[DeviceInfo]]


def fits(counts: Sequence[int], items: Items) -> bool:
    """Whether `counts` (one per item) cover every item's count."""
    return all(c >= item.count for c, (item, _) in zip(counts, items, strict=True))


class Policy:
    """One placement policy. Subclasses set the words and override what they constrain or
    score; the defaults constrain nothing and spread compositions across hosts.

    `selectable` policies are what a request's failure-domain `policy` names (one of them);
    the others are switched on by the request's boolean `flag` ("same_switch",
    "critical"). `check` names the policy's cut per reach group ("domain", "switch"; None:
    none), `reason` the funnel's and a rejection's words for it. `domains` is what a spread
    spreads over ("enclosures"; None: it does not spread devices) and `one_domain` one of
    them; `one_per_switch` says that each device of an item gets a switch of its own.
    `spreads_hosts`: compositions go to the emptiest host first and away from the tenant's
    other hosts (False: the snuggest core fit, the tenant's hosts welcome).
    `ranks_by_fragmentation`: hosts are ranked instead by the GPUs a placement fragments and
    strands for the expected requests (composer.placement.fragmentation).
    """

    name = ""
    label = ""  # the form's choice, and what a spec error calls it
    help = ""  # one line on what it does (docs, API description)
    words = ""  # as a rejection says it: "spread across enclosures"
    relax = ""  # how a rejection asks to relax it: "'spread across enclosures'"
    spare_words = ""  # heal: the rule a spare was looked for under ("" none)
    selectable = True
    flag: str | None = None
    check: str | None = None
    reason = "failure-domain policy"
    domains: str | None = None
    one_domain: str | None = None
    one_per_switch = False
    spreads_hosts = True
    ranks_by_fragmentation = False
    menu_rank = 100  # where the form lists it (the built-in ones first)

    def enabled(self, request: PlacementRequest) -> bool:
        """Whether `request` asks for this policy."""
        if self.flag is not None:
            return bool(getattr(request, self.flag))
        return request.policy == self.name

    # -- constraint -------------------------------------------------------------------

    def conflict(self, request: PlacementRequest) -> str | None:
        """Why `request` contradicts itself under this policy (a sentence naming the
        field), or None. Asked of the enabled policies only."""
        return None

    def blocked(self, request: PlacementRequest, snapshot: Snapshot) -> Set[str]:
        """Switches and enclosures `request` may not touch because of this policy (asked of
        every policy, enabled or not: isolation others asked for binds everyone)."""
        return frozenset()

    def per_switch(
        self, snapshot: Snapshot, items: Items, members: Set[str] | None
    ) -> dict[str, list[int]]:
        """Per switch, how many of each item count behind it among the enclosures `members`
        (all of `items`' when None): every free device, unless the policy spreads."""
        enclosures = snapshot.enclosures
        totals: dict[str, list[int]] = {}
        for index, (_, found) in enumerate(items):
            for enclosure, devices in found.items():
                if members is not None and enclosure not in members:
                    continue
                for switch in enclosures[enclosure].switches:
                    row = totals.setdefault(switch, [0] * len(items))
                    row[index] += len(devices)
        return totals

    def spread_counts(self, snapshot: Snapshot, items: Items, members: Set[str]) -> list[int]:
        """Per item, across how many of the policy's domains among `members` it is free
        (a policy that does not spread: how many devices)."""
        return [sum(len(v) for e, v in found.items() if e in members) for _, found in items]

    def group_fits(
        self, request: PlacementRequest, snapshot: Snapshot, items: Items, members: Set[str]
    ) -> bool:
        """Whether a reach group of enclosures `members` can meet the policy (latency
        aside). Asked only of policies with a `check`."""
        return True

    def choose(
        self,
        count: int,
        per_enclosure: PerEnclosure,
        order: EnclosureKey,
        switches_of: Callable[[str], tuple[str, ...]],
    ) -> list[DeviceInfo] | None:
        """`count` whole devices from `per_enclosure` for one host, or None when the policy
        cannot be met there. `order(enclosure)` ranks enclosures (preferred first; its
        first element is 0 for the host's own switch). By default one enclosure when one
        holds them all, the fullest (fewest free) that does; otherwise the smallest blocks
        first (fragments first, big blocks kept whole)."""
        # One enclosure holding them all is the common case: only those are weighed then
        # (`min` keeps the first of equals, in `per_enclosure`'s order, as a stable sort by
        # the same key would).
        fitting = [e for e, devices in per_enclosure.items() if len(devices) >= count]
        if fitting:

            def weight(e: str) -> tuple[object, ...]:
                key = order(e)
                return (key[0], len(per_enclosure[e]), key)

            best = min(fitting, key=weight)
            return list(per_enclosure[best][:count])
        keys = {e: order(e) for e in per_enclosure}
        ranked = sorted(per_enclosure, key=keys.__getitem__)
        ranked.sort(key=self._fragments_key(per_enclosure, keys))
        chosen: list[DeviceInfo] = []
        for enclosure in ranked:
            for device in per_enclosure[enclosure]:
                chosen.append(device)
                if len(chosen) == count:
                    return chosen
        return None

    def _fragments_key(
        self, per_enclosure: PerEnclosure, keys: Mapping[str, tuple[float, ...]]
    ) -> Callable[[str], tuple[object, ...]]:
        """The order `choose` takes enclosures in when none holds them all."""
        return lambda e: (keys[e][0], len(per_enclosure[e]), keys[e])

    def spare_excluded(
        self, enclosure: str, switches: Set[str], taken: Set[str], taken_switches: Set[str]
    ) -> bool:
        """Heal: whether a spare in `enclosure` (behind `switches`) breaks the policy next to
        the item's kept devices (in the enclosures `taken`, behind `taken_switches`)."""
        return False

    # -- score ------------------------------------------------------------------------

    def core_fit(self, idle: float) -> float:
        """The host penalty for how the request's cores fit it; `idle` is the share of the
        largest host's cores the request would leave idle there. Spread: the emptiest host
        first (the cores taken weigh)."""
        return CORE_FIT_WEIGHT * (1.0 - idle)

    def tenant_host_penalty(self, request: PlacementRequest, host: HostInfo) -> float:
        """Spread: a host the tenant already has a composition on ranks after the others."""
        if host.id in request.tenant_hosts:
            return TENANT_HOST_PENALTY
        return 0.0

    def host_words(self, request: PlacementRequest, host: HostInfo) -> str:
        """How the host was ranked, for the explanation."""
        how = "spread: the most free cores first"
        if host.id in request.tenant_hosts:
            how += ", hosts without the tenant's other compositions before this one"
        return how


P = TypeVar("P", bound=Policy)
_REGISTRY: dict[str, Policy] = {}
# The selectable names in registration order. A live list (changed in place), so that what
# was built from it at import (the API schema's enum) follows later registrations.
NAMES: list[str] = []
# What every decision asks, kept as registration changes rather than rebuilt per decision.
_FLAGGED: tuple[Policy, ...] = ()
_EVERYONE: tuple[Policy, ...] = ()
_ISOLATING: tuple[Policy, ...] = ()
_CONFLICTING: tuple[Policy, ...] = ()


def _changed() -> None:
    global _FLAGGED, _EVERYONE, _ISOLATING, _CONFLICTING
    _EVERYONE = tuple(_REGISTRY.values())
    _FLAGGED = tuple(p for p in _EVERYONE if not p.selectable)
    _ISOLATING = tuple(p for p in _EVERYONE if type(p).blocked is not Policy.blocked)
    _CONFLICTING = tuple(p for p in _EVERYONE if type(p).conflict is not Policy.conflict)


def register(policy: P) -> P:
    """Add `policy` to the registry (after those already there) and return it. Its name
    must be new."""
    if policy.name in _REGISTRY:
        raise ValueError(f"a placement policy named {policy.name!r} is registered already")
    _REGISTRY[policy.name] = policy
    if policy.selectable:
        NAMES.append(policy.name)
    _changed()
    return policy


def unregister(name: str) -> None:
    """Take the policy `name` out of the registry."""
    policy = _REGISTRY.pop(name)
    if policy.selectable:
        NAMES.remove(name)
    _changed()


@contextmanager
def registered(policy: P) -> Iterator[P]:
    """`policy` registered for the length of the block (tests of a new policy)."""
    register(policy)
    try:
        yield policy
    finally:
        unregister(policy.name)


def named(name: str) -> Policy:
    """The policy called `name` (KeyError when there is none)."""
    return _REGISTRY[name]


def choice(name: str) -> Policy | None:
    """The selectable policy `name`, or None when no such policy is registered (a stored
    spec is read with it, never trusted)."""
    return _REGISTRY[name] if name in NAMES else None


def selectable() -> tuple[Policy, ...]:
    """The policies a request's `policy` may name, in registration order."""
    return tuple(_REGISTRY[n] for n in NAMES)


def choices() -> list[tuple[str, str]]:
    """(name, label) of each selectable policy, in the form's order: the form's choices."""
    return [(p.name, p.label) for p in sorted(selectable(), key=lambda p: p.menu_rank)]


def flagged() -> tuple[Policy, ...]:
    """The policies a request flag switches on, in registration order."""
    return _FLAGGED


def selected(request: PlacementRequest) -> Policy:
    """The policy `request.policy` names (validated before any other use)."""
    return _REGISTRY[request.policy]


def enabled(request: PlacementRequest) -> list[Policy]:
    """Every policy `request` switches on: its flags' (in registration order), then the
    selected one."""
    found = [p for p in _FLAGGED if p.enabled(request)]
    chosen = _REGISTRY.get(request.policy)
    if chosen is not None:
        found.append(chosen)
    return found


def conflict(request: PlacementRequest) -> str | None:
    """Why `request` contradicts itself under a policy it enables (the first that says),
    or None. Only the policies that can object are asked."""
    for policy in _CONFLICTING:
        if policy.enabled(request):
            problem = policy.conflict(request)
            if problem is not None:
                return problem
    return None


def everyone() -> tuple[Policy, ...]:
    """Every registered policy."""
    return _EVERYONE


def isolating() -> tuple[Policy, ...]:
    """The policies that keep requests out of switches or enclosures (those that override
    `blocked`): isolation asks each of them, whatever the request enables."""
    return _ISOLATING


def checking(request: PlacementRequest, check: str) -> Policy:
    """The enabled policy of `request` that makes the reach-group cut `check` (none does:
    the selected one, as a failed pick on a host is its)."""
    return next((p for p in enabled(request) if p.check == check), selected(request))
