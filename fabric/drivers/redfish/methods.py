"""Which ways of composing a Redfish service advertises, read from the service itself.

- *expandable*: a ComputerSystem whose `Links.ResourceBlocks` may change after it exists
  (`Composition.UseCases` has `ExpandableSystem`, the system offers
  `Links.ResourceBlocks@Redfish.AllowableValues`, or the Systems collection's capabilities
  object says `ResourceBlocks@Redfish.UpdatableAfterCreate`): PATCH it, with If-Match.
- *specific*: the Systems collection's `@Redfish.CollectionCapabilities` has the use case
  `ComputerSystemComposition`: POST a system naming its resource blocks, DELETE it to
  decompose.
- *compose-action*: the CompositionService has `#CompositionService.Compose` and its
  ActionInfo allows `RequestType` `Apply` (and `Preview`, tried first when allowed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabric.drivers.redfish.reader import Reader, ref
from fabric.drivers.redfish.walk import Snapshot

EXPANDABLE = "expandable"
SPECIFIC = "specific"
COMPOSE_ACTION = "compose-action"
ALL = (EXPANDABLE, SPECIFIC, COMPOSE_ACTION)


@dataclass(frozen=True, slots=True)
class Methods:
    """What the service offers; `names()` is what a probe reports."""

    enabled: bool = False  # a CompositionService is there and enabled
    specific_target: str = ""  # the collection to POST a composed system to
    updatable_after_create: bool = False
    compose_target: str = ""
    compose_preview: bool = False
    expandable_systems: frozenset[str] = frozenset()

    def names(self) -> tuple[str, ...]:
        found = []
        if self.enabled and (self.expandable_systems or self.updatable_after_create):
            found.append(EXPANDABLE)
        if self.enabled and self.specific_target:
            found.append(SPECIFIC)
        if self.enabled and self.compose_target:
            found.append(COMPOSE_ACTION)
        return tuple(found)

    def expandable(self, system_id: str, system: Mapping[str, Any] | None = None) -> bool:
        """Whether the system's blocks may change: as the walk found it, or as `system`, read
        just now, says of itself (a system composed since the walk is in no walk)."""
        return self.enabled and (
            system_id in self.expandable_systems
            or self.updatable_after_create
            or (system is not None and system_is_expandable(system))
        )


def system_is_expandable(system: Mapping[str, Any]) -> bool:
    """What a system says of itself: expandable, or its blocks may be chosen."""
    use_cases = (system.get("Composition") or {}).get("UseCases") or []
    links = system.get("Links") or {}
    return "ExpandableSystem" in use_cases or "ResourceBlocks@Redfish.AllowableValues" in links


def methods_of(snap: Snapshot, reader: Reader) -> Methods:
    """Read the composition methods from the walk (and the capability objects it links)."""
    service = snap.composition
    if service is None or service.get("ServiceEnabled") is False:
        return Methods()
    specific_target = ""
    updatable = False
    capabilities = (snap.systems_collection.get("@Redfish.CollectionCapabilities") or {}).get(
        "Capabilities"
    ) or []
    for capability in capabilities:
        if capability.get("UseCase") != "ComputerSystemComposition":
            continue
        specific_target = ref((capability.get("Links") or {}).get("TargetCollection")) or str(
            snap.systems_collection.get("@odata.id") or ""
        )
        capability_object = ref(capability.get("CapabilitiesObject"))
        details = reader.get(capability_object) if capability_object else None
        links = (details or {}).get("Links") or {}
        updatable = bool(links.get("ResourceBlocks@Redfish.UpdatableAfterCreate"))
    compose_target, preview = "", False
    action = (service.get("Actions") or {}).get("#CompositionService.Compose") or {}
    info_path = action.get("@Redfish.ActionInfo")
    if action.get("target") and info_path:
        info = reader.get(str(info_path)) or {}
        for parameter in info.get("Parameters") or []:
            if parameter.get("Name") == "RequestType":
                allowed = parameter.get("AllowableValues") or []
                if "Apply" in allowed:
                    compose_target = str(action["target"])
                    preview = "Preview" in allowed
    expandable = frozenset(
        str(s.get("@odata.id") or "").rstrip("/") for s in snap.systems if system_is_expandable(s)
    )
    return Methods(
        enabled=True,
        specific_target=specific_target,
        updatable_after_create=updatable,
        compose_target=compose_target,
        compose_preview=preview,
        expandable_systems=expandable,
    )
