"""What a POST to /redfish/v1/Systems may set: the Systems collection's
`@Redfish.CollectionCapabilities` and the two capabilities resources it points to.

- `/Systems/Capabilities` (UseCase `ComputerSystemComposition`, a *specific* composition):
  a Name, and the blocks in `Links.ResourceBlocks`, at most one compute block (the host;
  when none is named, placement picks one) and the device blocks
  (`@Redfish.ResourceBlockLimits`).
- `/Systems/ConstrainedCompositionCapabilities` (UseCase
  `ComputerSystemConstrainedComposition`): a Name, and what the placement engine is asked
  for: `Processors` members (GPUs or FPGAs, `@Redfish.RequestedCount` of them, of a
  `Model`), `Memory` (CXL memory, `CapacityMiB` in whole GiB), `Drives` (NVMe,
  `CapacityBytes`) and `NetworkInterfaces` (NICs), each member with its own count.

Both are ComputerSystem resources made of annotations only (`RequiredOnCreate`,
`OptionalOnCreate`, `AllowableValues`), as DSP2050 and DMTF's composability mockups show.
The zones they apply to are their `RelatedItem`s. The models offered are those of the
blocks the caller sees.
"""

from __future__ import annotations

from typing import Any

from composer.redfish.caller import Call
from composer.redfish.inventory import inventory
from composer.redfish.paths import SYSTEMS
from composer.redfish.routes import Route
from fabric.redfish_render.build import odata_type, ref, refs, resource

SPECIFIC = f"{SYSTEMS}/Capabilities"
CONSTRAINED = f"{SYSTEMS}/ConstrainedCompositionCapabilities"
PROCESSOR_TYPES = {"gpu": "GPU", "fpga": "FPGA"}  # device kind -> Processor.ProcessorType
CREATE = {"@Redfish.RequiredOnCreate": True, "@Redfish.SetOnlyOnCreate": True}
OPTIONAL = {"@Redfish.OptionalOnCreate": True, "@Redfish.SetOnlyOnCreate": True}


def _named(prop: str, annotations: dict[str, bool]) -> dict[str, bool]:
    return {f"{prop}{key}": value for key, value in annotations.items()}


def collection_capabilities(call: Call) -> dict[str, Any]:
    """The `@Redfish.CollectionCapabilities` annotation of the Systems collection."""
    from composer.redfish.zones import zone_paths

    zones = refs(zone_paths(call))

    def one(target: str, use_case: str) -> dict[str, Any]:
        return {
            "CapabilitiesObject": ref(target),
            "UseCase": use_case,
            "Links": {"TargetCollection": ref(SYSTEMS), "RelatedItem": zones},
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
        **_named("Name", CREATE),
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


def _models(call: Call) -> dict[str, list[str]]:
    """The device models of each kind among the blocks the caller sees."""
    found: dict[str, set[str]] = {}
    for node in inventory(call).blocks():
        if node.kind == "device" and node.attrs.get("model"):
            found.setdefault(node.attrs["device_kind"], set()).add(node.attrs["model"])
    return {kind: sorted(models) for kind, models in found.items()}


def constrained(call: Call) -> dict[str, Any]:
    """What a constrained composition (counts and properties, placed by Composer) may
    set."""
    models = _models(call)
    processor_models = sorted({m for kind in PROCESSOR_TYPES for m in models.get(kind, [])})
    processor = {
        "@odata.type": odata_type("Processor"),
        "@Redfish.RequestedCountRequired": True,
        "ProcessorType@Redfish.RequiredOnCreate": True,
        "ProcessorType@Redfish.AllowableValues": sorted(PROCESSOR_TYPES.values()),
        "Model@Redfish.OptionalOnCreate": True,
        "Model@Redfish.AllowableValues": processor_models,
    }
    return resource(
        CONSTRAINED,
        "Capabilities of a constrained composition",
        "ComputerSystem",
        **_named("Name", CREATE),
        **_named("Description", OPTIONAL),
        **{"Processors@Redfish.OptionalOnCreate": True},
        Processors={
            "@odata.type": "#ProcessorCollection.ProcessorCollection",
            "Members@Redfish.RequiredOnCreate": True,
            "Members": [processor],
        },
        **{"Memory@Redfish.OptionalOnCreate": True},
        Memory={
            "@odata.type": "#MemoryCollection.MemoryCollection",
            "Members@Redfish.RequiredOnCreate": True,
            "Members": [
                {
                    "@odata.type": odata_type("Memory"),
                    "@Redfish.RequestedCountRequired": True,
                    "CapacityMiB@Redfish.RequiredOnCreate": True,
                }
            ],
        },
        **{"Drives@Redfish.OptionalOnCreate": True},
        Drives=[
            {
                "@odata.type": odata_type("Drive"),
                "@Redfish.RequestedCountRequired": True,
                "CapacityBytes@Redfish.RequiredOnCreate": True,
                "Model@Redfish.OptionalOnCreate": True,
                "Model@Redfish.AllowableValues": models.get("nvme", []),
            }
        ],
        **{"NetworkInterfaces@Redfish.OptionalOnCreate": True},
        NetworkInterfaces={
            "@odata.type": "#NetworkInterfaceCollection.NetworkInterfaceCollection",
            "Members@Redfish.RequiredOnCreate": True,
            "Members": [
                {
                    "@odata.type": odata_type("NetworkInterface"),
                    "@Redfish.RequestedCountRequired": True,
                }
            ],
        },
    )


ROUTES = [
    Route(SPECIFIC, get=specific),
    Route(CONSTRAINED, get=constrained),
]
