"""A small composable data centre written as a Redfish mockup folder, for the driver
contract: a rack with two PDUs, three hosts composed around compute blocks (expandable),
a GPU box whose GPUs are resource blocks, a CXL memory box whose domain offers memory
chunks, and a CXL switch cabling them all, with endpoints, a zone and (empty) connections.

Everything reports healthy and no device is bound, as the contract's fresh world expects.
The DMTF mockups cannot serve for this: none holds both composable GPUs and CXL memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.redfish_server import MockService, serve

V1 = "/redfish/v1"
OK = {"State": "Enabled", "Health": "OK"}
HOSTS = 3
GPUS = 2
MEMORY_GIB = 1024


def _ref(path: str) -> dict[str, str]:
    return {"@odata.id": path}


def _collection(path: str, members: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "@odata.id": path,
        "Members": [_ref(m) for m in members],
        "Members@odata.count": len(members),
        **extra,
    }


def _port(path: str, kind: str, connected: str) -> dict[str, Any]:
    return {
        "@odata.id": path,
        "@odata.type": "#Port.v1_11_0.Port",
        "Id": path.rsplit("/", 1)[1],
        "Name": path.rsplit("/", 1)[1],
        "PortType": kind,
        "PortProtocol": "CXL",
        "CurrentSpeedGbps": 512,
        "Width": 16,
        "ActiveWidth": 16,
        "LinkStatus": "LinkUp",
        "Status": OK,
        "Links": {"ConnectedPorts": [_ref(connected)]},
    }


def _endpoint(path: str, role: str, kind: str, entity: str) -> dict[str, Any]:
    return {
        "@odata.id": path,
        "ConnectedEntities": [{"EntityRole": role, "EntityType": kind, "EntityLink": _ref(entity)}],
    }


def _metrics(r: dict[str, dict[str, Any]], gpu: str, box: str, port: str) -> None:
    """Metrics where a real service would have them, linked from their element: GPU 0's
    ProcessorMetrics and EnvironmentMetrics, the GPU box's EnvironmentMetrics and a switch
    port's PortMetrics, under paths no client could guess. GPU 1 and the rest have none."""
    links = {
        gpu: {
            "Metrics": f"{V1}/Telemetry/m/gpu0-processor",
            "EnvironmentMetrics": f"{V1}/Telemetry/m/gpu0-env",
        },
        box: {"EnvironmentMetrics": f"{V1}/Telemetry/m/box-env"},
        port: {"Metrics": f"{V1}/Telemetry/m/port1"},
    }
    for element, named in links.items():
        for name, path in named.items():
            r[element][name] = _ref(path)
    r[f"{V1}/Telemetry/m/gpu0-processor"] = {
        "@odata.id": f"{V1}/Telemetry/m/gpu0-processor",
        "@odata.type": "#ProcessorMetrics.v1_6_0.ProcessorMetrics",
        "BandwidthPercent": 62.5,
        "CacheMetricsTotal": {
            "CurrentPeriod": {"CorrectableECCErrorCount": 3, "UncorrectableECCErrorCount": 0}
        },
    }
    r[f"{V1}/Telemetry/m/gpu0-env"] = {
        "@odata.id": f"{V1}/Telemetry/m/gpu0-env",
        "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
        "TemperatureCelsius": {"Reading": 58.0},
        "PowerWatts": {"Reading": 310.5},
    }
    r[f"{V1}/Telemetry/m/box-env"] = {
        "@odata.id": f"{V1}/Telemetry/m/box-env",
        "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
        "TemperatureCelsius": {"Reading": 31.0},
    }
    r[f"{V1}/Telemetry/m/port1"] = {
        "@odata.id": f"{V1}/Telemetry/m/port1",
        "@odata.type": "#PortMetrics.v1_3_0.PortMetrics",
        "PCIeErrors": {
            "CorrectableErrorCount": 5,
            "NonFatalErrorCount": 1,
            "FatalErrorCount": 0,
            "L0ToRecoveryCount": 2,
        },
    }


def world() -> dict[str, dict[str, Any]]:
    """Every resource of the world by its path."""
    r: dict[str, dict[str, Any]] = {}
    fabric, switch = f"{V1}/Fabrics/CXL", f"{V1}/Fabrics/CXL/Switches/SW1"
    rack, pdus = f"{V1}/Chassis/Rack1", [f"{V1}/PowerEquipment/RackPDUs/{n}" for n in ("A", "B")]
    r[V1] = {
        "@odata.id": V1,
        "RedfishVersion": "1.17.0",
        "Vendor": "Composer tests",
        "Product": "contract world",
        "Systems": _ref(f"{V1}/Systems"),
        "Chassis": _ref(f"{V1}/Chassis"),
        "Fabrics": _ref(f"{V1}/Fabrics"),
        "CompositionService": _ref(f"{V1}/CompositionService"),
        "PowerEquipment": _ref(f"{V1}/PowerEquipment"),
        "SessionService": _ref(f"{V1}/SessionService"),
        "EventService": _ref(f"{V1}/EventService"),
        "Links": {"Sessions": _ref(f"{V1}/SessionService/Sessions")},
        "ProtocolFeaturesSupported": {
            "ExpandQuery": {"Levels": True, "NoLinks": True, "MaxLevels": 1}
        },
    }
    r[f"{V1}/SessionService"] = {
        "@odata.id": f"{V1}/SessionService",
        "Sessions": _ref(f"{V1}/SessionService/Sessions"),
    }
    r[f"{V1}/EventService"] = {
        "@odata.id": f"{V1}/EventService",
        "ServiceEnabled": True,
        "ServerSentEventUri": f"{V1}/EventService/SSE",
    }
    r[f"{V1}/SessionService/Sessions"] = _collection(f"{V1}/SessionService/Sessions", [])
    r[f"{V1}/PowerEquipment"] = {
        "@odata.id": f"{V1}/PowerEquipment",
        "RackPDUs": _ref(f"{V1}/PowerEquipment/RackPDUs"),
    }
    r[f"{V1}/PowerEquipment/RackPDUs"] = _collection(f"{V1}/PowerEquipment/RackPDUs", pdus)
    for pdu in pdus:
        r[pdu] = {
            "@odata.id": pdu,
            "Name": f"PDU {pdu[-1]}",
            "PowerCapacityVA": 17300,
            "Status": OK,
            "Links": {"Chassis": [_ref(rack)]},
        }
    boxes = {"GPUBox": pdus[0], "MemBox": pdus[1]}
    host_chassis = [f"{V1}/Chassis/Host{n}" for n in range(1, HOSTS + 1)]
    chassis = [rack, *(f"{V1}/Chassis/{b}" for b in boxes), *host_chassis]
    r[f"{V1}/Chassis"] = _collection(f"{V1}/Chassis", chassis)
    r[rack] = {"@odata.id": rack, "Name": "Rack 1", "ChassisType": "Rack", "Status": OK}
    switch_ports: list[str] = []

    def cable(owner_port: str, role: str) -> None:
        """A switch port cabled to `owner_port` (a host's or a box's port)."""
        port = f"{switch}/Ports/P{len(switch_ports) + 1}"
        switch_ports.append(port)
        r[port] = _port(port, role, owner_port)
        r[owner_port] = _port(owner_port, "UpstreamPort", port)

    for box, pdu in boxes.items():
        path = f"{V1}/Chassis/{box}"
        adapter = f"{path}/FabricAdapters/1"
        r[path] = {
            "@odata.id": path,
            "Name": box,
            "ChassisType": "Enclosure",
            "Status": OK,
            "Manufacturer": "Contoso",
            "Links": {"ContainedBy": _ref(rack), "PoweredBy": [_ref(pdu)]},
            "FabricAdapters": _ref(f"{path}/FabricAdapters"),
        }
        r[f"{path}/FabricAdapters"] = _collection(f"{path}/FabricAdapters", [adapter])
        r[adapter] = {"@odata.id": adapter, "Ports": _ref(f"{adapter}/Ports")}
        r[f"{adapter}/Ports"] = _collection(f"{adapter}/Ports", [f"{adapter}/Ports/1"])
        cable(f"{adapter}/Ports/1", "DownstreamPort")
    gpu_box, mem_box = f"{V1}/Chassis/GPUBox", f"{V1}/Chassis/MemBox"
    domain = f"{mem_box}/MemoryDomains/1"
    r[mem_box]["MemoryDomains"] = _ref(f"{mem_box}/MemoryDomains")
    r[f"{mem_box}/MemoryDomains"] = _collection(f"{mem_box}/MemoryDomains", [domain])
    r[domain] = {
        "@odata.id": domain,
        "Name": "CXL memory",
        "Status": OK,
        "MemorySizeMiB": MEMORY_GIB * 1024,
        "AllowsMemoryChunkCreation": True,
        "MemoryChunkIncrementMiB": 1024,
        "MemoryChunks": _ref(f"{domain}/MemoryChunks"),
    }
    r[f"{domain}/MemoryChunks"] = _collection(f"{domain}/MemoryChunks", [])

    service = f"{V1}/CompositionService"
    blocks = [f"{service}/ResourceBlocks/Compute{n}" for n in range(1, HOSTS + 1)]
    gpus = []
    for n in range(GPUS):
        block = f"{service}/ResourceBlocks/GPU{n}"
        gpu = f"{block}/Processors/GPU{n}"
        gpus.append(gpu)
        blocks.append(block)
        r[block] = {
            "@odata.id": block,
            "Name": f"GPU block {n}",
            "Status": OK,
            "ResourceBlockType": ["Processor"],
            "Processors": [_ref(gpu)],
            "CompositionStatus": {
                "CompositionState": "Unused",
                "Reserved": False,
                "SharingCapable": False,
            },
            "Links": {"Chassis": [_ref(gpu_box)], "ComputerSystems": []},
        }
        r[gpu] = {
            "@odata.id": gpu,
            "Name": f"GPU {n}",
            "ProcessorType": "GPU",
            "Status": OK,
            "Manufacturer": "Contoso",
            "Model": "H1",
            "SerialNumber": f"GPU-{n}",
            "MemorySummary": {"TotalMemorySizeMiB": 81920},
            "Links": {"Chassis": _ref(gpu_box)},
        }
    r[service] = {
        "@odata.id": service,
        "ServiceEnabled": True,
        "Status": OK,
        "ResourceBlocks": _ref(f"{service}/ResourceBlocks"),
        "ResourceZones": _ref(f"{service}/ResourceZones"),
    }
    r[f"{service}/ResourceBlocks"] = _collection(f"{service}/ResourceBlocks", blocks)
    r[f"{service}/ResourceZones"] = _collection(
        f"{service}/ResourceZones", [f"{service}/ResourceZones/1"]
    )
    r[f"{service}/ResourceZones/1"] = {
        "@odata.id": f"{service}/ResourceZones/1",
        "Status": OK,
        "Links": {"ResourceBlocks": [_ref(b) for b in blocks]},
    }

    systems = [f"{V1}/Systems/Sys{n}" for n in range(1, HOSTS + 1)]
    r[f"{V1}/Systems"] = _collection(
        f"{V1}/Systems",
        systems,
        **{
            "@Redfish.CollectionCapabilities": {
                "Capabilities": [
                    {
                        "UseCase": "ComputerSystemComposition",
                        "CapabilitiesObject": _ref(f"{V1}/Systems/Capabilities"),
                        "Links": {"TargetCollection": _ref(f"{V1}/Systems")},
                    }
                ]
            }
        },
    )
    r[f"{V1}/Systems/Capabilities"] = {
        "@odata.id": f"{V1}/Systems/Capabilities",
        "Links": {
            "ResourceBlocks@Redfish.RequiredOnCreate": True,
            "ResourceBlocks@Redfish.UpdatableAfterCreate": True,
        },
    }
    endpoints = []
    for n, (system, block, box) in enumerate(zip(systems, blocks, host_chassis, strict=False)):
        cpu, endpoint = f"{system}/Processors/CPU", f"{fabric}/Endpoints/I{n + 1}"
        endpoints.append(endpoint)
        r[box] = {
            "@odata.id": box,
            "Name": f"Host chassis {n + 1}",
            "ChassisType": "RackMount",
            "Status": OK,
            "Links": {"ContainedBy": _ref(rack), "PoweredBy": [_ref(pdus[n % 2])]},
        }
        r[system] = {
            "@odata.id": system,
            "Name": f"host-{n + 1}",
            "SystemType": "Composed",
            "Status": OK,
            "ProcessorSummary": {"CoreCount": 64},
            "MemorySummary": {"TotalSystemMemoryGiB": 512},
            "Processors": _ref(f"{system}/Processors"),
            "Links": {"Chassis": [_ref(box)], "ResourceBlocks": [_ref(block)]},
        }
        r[block] = {
            "@odata.id": block,
            "Name": f"Compute {n + 1}",
            "Status": OK,
            "ResourceBlockType": ["Compute"],
            "CompositionStatus": {"CompositionState": "Composed", "Reserved": False},
            "Links": {"ComputerSystems": [_ref(system)], "Chassis": [_ref(box)]},
        }
        r[f"{system}/Processors"] = _collection(f"{system}/Processors", [cpu])
        r[cpu] = {
            "@odata.id": cpu,
            "ProcessorType": "CPU",
            "Status": OK,
            "Ports": _ref(f"{cpu}/Ports"),
        }
        r[f"{cpu}/Ports"] = _collection(f"{cpu}/Ports", [f"{cpu}/Ports/1"])
        cable(f"{cpu}/Ports/1", "UpstreamPort")
        r[endpoint] = _endpoint(endpoint, "Initiator", "Processor", cpu)
    targets = {f"{fabric}/Endpoints/TGPU{n}": g for n, g in enumerate(gpus)}
    targets[f"{fabric}/Endpoints/TMEM"] = domain
    for endpoint, entity in targets.items():
        endpoints.append(endpoint)
        r[endpoint] = _endpoint(endpoint, "Target", "CXLDevice", entity)

    _metrics(r, gpus[0], gpu_box, switch_ports[0])
    r[f"{V1}/Fabrics"] = _collection(f"{V1}/Fabrics", [fabric])
    r[fabric] = {
        "@odata.id": fabric,
        "FabricType": "CXL",
        "Status": OK,
        "Switches": _ref(f"{fabric}/Switches"),
        "Endpoints": _ref(f"{fabric}/Endpoints"),
        "Zones": _ref(f"{fabric}/Zones"),
        "Connections": _ref(f"{fabric}/Connections"),
    }
    r[f"{fabric}/Switches"] = _collection(f"{fabric}/Switches", [switch])
    r[switch] = {
        "@odata.id": switch,
        "Name": "CXL switch 1",
        "SwitchType": "CXL",
        "Status": OK,
        "Ports": _ref(f"{switch}/Ports"),
    }
    r[f"{switch}/Ports"] = _collection(f"{switch}/Ports", switch_ports)
    r[f"{fabric}/Endpoints"] = _collection(f"{fabric}/Endpoints", endpoints)
    r[f"{fabric}/Zones"] = _collection(f"{fabric}/Zones", [f"{fabric}/Zones/1"])
    r[f"{fabric}/Zones/1"] = {
        "@odata.id": f"{fabric}/Zones/1",
        "Status": OK,
        "Links": {"Endpoints": [_ref(e) for e in endpoints]},
    }
    r[f"{fabric}/Connections"] = _collection(f"{fabric}/Connections", [])
    return r


def served_world(folder: Path) -> Iterator[tuple[MockService, str]]:
    """Write the world under `folder` and serve it with state (for a fixture to yield
    from): the test service and its base URL."""
    with serve(write_world(folder)) as served:
        yield served


def write_world(folder: Path) -> Path:
    """Write the world as a mockup folder (one index.json per path) and return it."""
    for path, resource in world().items():
        target = folder / path.removeprefix(V1).lstrip("/") / "index.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(resource))
    return folder
