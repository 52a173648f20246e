"""What a POST to /redfish/v1/Systems may set: the Systems collection's
`@Redfish.CollectionCapabilities` and the two capabilities resources it points to.

- `/Systems/Capabilities` (UseCase `ComputerSystemComposition`, a *specific* composition):
  a Name, and the blocks in `Links.ResourceBlocks`, at most one compute block (the host;
  when none is named, placement picks one) and the device blocks
  (`@Redfish.ResourceBlockLimits`).
- `/Systems/ConstrainedCompositionCapabilities` (UseCase
  `ComputerSystemConstrainedComposition`): a Name, and what the placement engine is asked
  for: `Processors` members (GPUs or FPGAs, `@Redfish.RequestedCount` of them, of a
  `Model`), `Memory` (CXL memory, `CapacityMiB`), `Storage` (NVMe drives by
  `CapacityBytes`) and `NetworkInterfaces` (NICs), each member with its own count.

Both are ComputerSystem resources made of annotations only (`RequiredOnCreate`,
`OptionalOnCreate`), as DSP2050 and DMTF's composability mockups show. The zones they
apply to are their `RelatedItem`s.
"""

from __future__ import annotations

from typing import Any

from composer.redfish.caller import Call
from composer.redfish.paths import SYSTEMS
from composer.redfish.routes import Route
from fabric.redfish_render.build import odata_type, ref, refs, resource

SPECIFIC = f"{SYSTEMS}/Capabilities"
CONSTRAINED = f"{SYSTEMS}/ConstrainedCompositionCapabilities"
OPTIONAL = {"@Redfish.OptionalOnCreate": True, "@Redfish.SetOnlyOnCreate": True}


def _named(prop: str, annotations: dict[str, bool]) -> dict[str, bool]:
    return {f"{prop}{key}": value for key, value in annotations.items()}


def collection_capabilities(call: Call) -> dict[str, Any]:
    """The `@Redfish.CollectionCapabilities` annotation of the Systems collection."""
    from composer.redfish.zones import zone_paths

    zones = refs(zone_paths(call))

    def one(target: str, use_case: str) -> dict[str, Any]:
        # Links before CapabilitiesObject: DMTF's validators take every link that follows
        # a CapabilitiesObject in the same object for an annotation's, and so would skip
        # the zones (real resources) named here.
        return {
            "UseCase": use_case,
            "Links": {"TargetCollection": ref(SYSTEMS), "RelatedItem": zones},
            "CapabilitiesObject": ref(target),
        }

    return {
        "@odata.type": odata_type("CollectionCapabilities"),
        "Capabilities": [
            one(SPECIFIC, "ComputerSystemComposition"),
            one(CONSTRAINED, "ComputerSystemConstrainedComposition"),
        ],
    }


def specific(call: Call) -> dict[str, Any]:
    """What a specific composition (blocks named one by one) may set."""
    return resource(
        SPECIFIC,
        "Capabilities of a specific composition",
        "ComputerSystem",
        **_named("Name", OPTIONAL),  # a name is made up when none is given
        **_named("Description", OPTIONAL),
        **{"Links@Redfish.RequiredOnCreate": True},
        Links={"ResourceBlocks@Redfish.RequiredOnCreate": True},
        **{
            "@Redfish.ResourceBlockLimits": {
                "MinCompute": 0,
                "MaxCompute": 1,
            }
        },
    )


def constrained(call: Call) -> dict[str, Any]:
    """What a constrained composition (counts and properties, placed by Composer) may
    set: the kinds of member a request may list, each optional. (DMTF's composability
    mockup also describes each member inline; DMTF's service validator refuses a
    navigation property without its @odata.id, so the annotations stay at the top.)"""
    return resource(
        CONSTRAINED,
        "Capabilities of a constrained composition",
        "ComputerSystem",
        **_named("Name", OPTIONAL),  # a name is made up when none is given
        **_named("Description", OPTIONAL),
        **_named("Processors", OPTIONAL),
        **_named("Memory", OPTIONAL),
        **_named("Storage", OPTIONAL),
        **_named("NetworkInterfaces", OPTIONAL),
    )


ROUTES = [
    Route(SPECIFIC, get=specific),
    Route(CONSTRAINED, get=constrained),
]
