"""Builders of Redfish resources: identity, links, collections, types, locations, Status."""

from __future__ import annotations

from typing import Any

Resource = dict[str, Any]

V1 = "/redfish/v1"

# The schema version each resource is rendered as (all present in DMTF's published CSDL).
VERSIONS: dict[str, str] = {
    "ServiceRoot": "v1_20_0",
    "SessionService": "v1_2_0",
    "Session": "v1_8_0",
    "Chassis": "v1_28_0",
    "ComputerSystem": "v1_27_0",
    "CompositionService": "v1_2_3",
    "ResourceBlock": "v1_4_3",
    "Zone": "v1_6_3",
    "Fabric": "v1_4_0",
    "Switch": "v1_11_0",
    "Port": "v1_18_0",
    "Endpoint": "v1_8_2",
    "Connection": "v1_4_0",
    "Processor": "v1_22_0",
    "MemoryDomain": "v1_5_1",
    "MemoryChunks": "v1_6_2",
    "Drive": "v1_22_0",
    "NetworkInterface": "v1_2_3",
    "NetworkAdapter": "v1_14_0",
    "PCIeDevice": "v1_21_0",
    "PCIeFunction": "v1_7_0",
    "FabricAdapter": "v1_5_3",
    "PowerDistribution": "v1_6_0",
    "PowerEquipment": "v1_2_3",
    "PowerSubsystem": "v1_1_3",
    "PowerSupply": "v1_6_0",
    "Outlet": "v1_4_4",
    "ProcessorMetrics": "v1_7_0",
    "EnvironmentMetrics": "v1_5_0",
    "PortMetrics": "v1_8_1",
    "EventService": "v1_12_0",
    "Event": "v1_7_0",
    "TaskService": "v1_3_0",
    "Task": "v1_7_4",
    "AccountService": "v1_18_1",
    "ManagerAccount": "v1_14_1",
    "Role": "v1_3_3",
    "MessageRegistryFile": "v1_1_5",
    "CompositionReservation": "v1_0_2",
    "CollectionCapabilities": "v1_4_1",
    "Memory": "v1_23_0",
}
# Collections named otherwise than <Type>Collection.
COLLECTION_TYPES = {"MemoryChunks": "MemoryChunksCollection", "Zone": "ZoneCollection"}


def ref(path: str) -> dict[str, str]:
    return {"@odata.id": path}


def refs(paths: list[str]) -> list[dict[str, str]]:
    return [ref(p) for p in paths]


def odata_type(name: str) -> str:
    return f"#{name}.{VERSIONS[name]}.{name}"


def resource(path: str, name: str, type_name: str, **body: Any) -> Resource:
    """A resource with its identity: @odata.id, @odata.type, Id (the last segment), Name."""
    return {
        "@odata.id": path,
        "@odata.type": odata_type(type_name),
        "Id": path.rsplit("/", 1)[-1],
        "Name": name,
        **body,
    }


def collection(path: str, type_name: str, name: str, members: list[str]) -> Resource:
    kind = COLLECTION_TYPES.get(type_name, f"{type_name}Collection")
    return {
        "@odata.id": path,
        "@odata.type": f"#{kind}.{kind}",
        "Name": name,
        "Members": refs(members),
        "Members@odata.count": len(members),
    }


def stated(**fields: str) -> dict[str, str]:
    """Only the fields that say something: Redfish asks a service to leave out a property
    it has no value for rather than send an empty string (`Manufacturer`, `Model`...)."""
    return {name: value for name, value in fields.items() if value}


def slot(number: object, kind: str = "Slot") -> dict[str, object]:
    """Where a part sits in its chassis: a `Location` whose `PartLocation` numbers the
    slot (or bay), as a real service says it."""
    ordinal = int(str(number or 0))
    return {
        "PartLocation": {
            "LocationOrdinalValue": ordinal,
            "LocationType": kind,
            "ServiceLabel": f"{kind} {ordinal}",
        }
    }


def health_status(health: str = "OK", state: str = "Enabled") -> dict[str, str]:
    """A Status: `health` OK, Warning or Critical; `state` Enabled, Disabled,
    StandbyOffline (maintenance), Absent..."""
    return {"State": state, "Health": health}


def event(event_id: str, name: str, records: list[Resource]) -> Resource:
    """An Event resource (what an SSE message or a push delivery carries): `records` are
    `messages.event_record()`s, numbered here by their place (`MemberId`)."""
    numbered = [{**record, "MemberId": str(number)} for number, record in enumerate(records)]
    return {
        "@odata.type": odata_type("Event"),
        "Id": event_id,
        "Name": name,
        "Context": "",
        "Events": numbered,
    }
