"""Impact contributors: how layers above the fabric add to a blast radius.

The fabric knows links, switches, enclosures, devices and hosts; it does not know
compositions or tenants (fabric never imports composer). A contributor is a callable that
receives the fabric's `Impact` and returns a mapping merged into `Impact.extra`, e.g. the
composition layer registers one returning {"compositions": [...], "tenants": [...]} from
its AppConfig.ready():

    from fabric.topology.impact import register_contributor
    register_contributor(composition_impact)

`blast_radius(graph, specs)` calls the registered contributors in registration order (a
later one wins a key clash); passing `contributors=` replaces them for that call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fabric.topology.radius import Impact

__all__ = [
    "ImpactContributor",
    "register_contributor",
    "registered_contributors",
    "unregister_contributor",
]


class ImpactContributor(Protocol):
    """Adds what a layer above the fabric loses to an Impact; must not change anything."""

    def __call__(self, impact: Impact) -> Mapping[str, Any]: ...


_REGISTRY: list[ImpactContributor] = []


def register_contributor(fn: ImpactContributor) -> ImpactContributor:
    """Register `fn` for every blast radius (once: registering it again changes nothing).

    Returns `fn`, so it can be used as a decorator.
    """
    if fn not in _REGISTRY:
        _REGISTRY.append(fn)
    return fn


def unregister_contributor(fn: ImpactContributor) -> None:
    """Remove `fn` from the registry; nothing happens when it was not registered."""
    if fn in _REGISTRY:
        _REGISTRY.remove(fn)


def registered_contributors() -> tuple[ImpactContributor, ...]:
    """The registered contributors, in registration order."""
    return tuple(_REGISTRY)
