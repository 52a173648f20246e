"""Enumerations of the physical world; each value carries a comment on what it means."""

from __future__ import annotations

from django.db import models


class DeviceKind(models.TextChoices):
    GPU = "gpu", "GPU"
    CXL_MEMORY = "cxl_memory", "CXL memory"  # partitionable into GiB slices
    NVME = "nvme", "NVMe drive"
    NIC = "nic", "NIC"
    DPU = "dpu", "DPU"
    FPGA = "fpga", "FPGA"


class DeviceState(models.TextChoices):
    """A CXL memory device is in use while one of its slices is (see fabric.capacity)."""

    FREE = "free", "Free"  # present, healthy enough, bound to nothing (memory: no slice)
    RESERVED = "reserved", "Reserved"  # held for a composition being built (memory: slices)
    BOUND = "bound", "Bound"  # bound to a host through the fabric (memory: a slice, at least)
    FAILED = "failed", "Failed"  # the fabric manager reports it broken
    MAINTENANCE = "maintenance", "Maintenance"  # taken out of service by an operator
    ABSENT = "absent", "Absent"  # no longer reported by discovery; history is kept


class Health(models.TextChoices):
    OK = "ok", "OK"
    WARNING = "warning", "Warning"  # degraded: works, but something needs attention
    CRITICAL = "critical", "Critical"  # failed or unreachable
    UNKNOWN = "unknown", "Unknown"  # never read, or the manager did not say


class ComponentState(models.TextChoices):
    """Lifecycle of switches, hosts and enclosures (not of devices, see DeviceState)."""

    ACTIVE = "active", "Active"
    MAINTENANCE = "maintenance", "Maintenance"
    ABSENT = "absent", "Absent"


class EnclosureKind(models.TextChoices):
    GPU_CHASSIS = "gpu_chassis", "GPU chassis"
    CXL_MEMORY_BOX = "cxl_memory_box", "CXL memory box"
    JBOF = "jbof", "NVMe JBOF"
    IO_CHASSIS = "io_chassis", "I/O chassis"  # NICs, DPUs and FPGAs


class SwitchProtocol(models.TextChoices):
    PCIE = "pcie", "PCIe"
    CXL = "cxl", "CXL"


class SwitchTier(models.TextChoices):
    SPINE = "spine", "Spine"
    LEAF = "leaf", "Leaf"


class PortRole(models.TextChoices):
    HOST = "host", "Host-facing"  # a switch port cabled to a host uplink
    DOWNSTREAM = "downstream", "Downstream"  # a switch port cabled to an enclosure
    FABRIC = "fabric", "Inter-switch"  # a switch port cabled to another switch
    UPLINK = "uplink", "Uplink"  # a host's or enclosure's own port into the fabric


class LinkState(models.TextChoices):
    UP = "up", "Up"
    DEGRADED = "degraded", "Degraded"  # trained at reduced width or speed, or erroring
    DOWN = "down", "Down"


class FaultAction(models.TextChoices):
    FAIL = "fail", "Fail"
    DEGRADE = "degrade", "Degrade"
    RECOVER = "recover", "Recover"


class FaultTarget(models.TextChoices):
    DEVICE = "device", "Device"
    LINK = "link", "Link"
    SWITCH = "switch", "Switch"
    ENCLOSURE = "enclosure", "Enclosure"
    POWER_FEED = "power_feed", "Power feed"


class ChangeAction(models.TextChoices):
    ADDED = "added", "Added"  # first reported by discovery
    CHANGED = "changed", "Changed"  # an attribute, health or state changed
    VANISHED = "vanished", "Vanished"  # no longer reported; marked absent
    RETURNED = "returned", "Returned"  # reported again after being absent
    FAULT = "fault", "Fault injected"  # simulated fabric only
    SYNCED = "synced", "Synchronised"  # a fabric manager's inventory was synchronised
    DELETED = "deleted", "Deleted"  # removed by an operator (a fabric manager)
    TESTED = "tested", "Connection tested"  # an operator tested a fabric manager's connection


class FailureDomainKind(models.TextChoices):
    """What a failure domain is; see fabric.topology.domains for what each one takes down."""

    RACK = "rack", "Rack"  # everything in the rack
    POWER_FEED = "power_feed", "Power feed"  # the hosts, switches and enclosures it supplies
    ENCLOSURE = "enclosure", "Enclosure"  # a GPU chassis, JBOF or I/O chassis and its devices
    MEMORY_BOX = "memory_box", "CXL memory box"  # a CXL memory box and its memory devices
    SWITCH = "switch", "Switch"  # the switch and its links
    LINK = "link", "Link"  # one cable
    FABRIC_MANAGER = "fabric_manager", "Fabric manager"  # bindings freeze; the data path stays


class AlertSeverity(models.TextChoices):
    """How urgently a person must look; see fabric/health/conditions.py for what raises each."""

    INFO = "info", "Info"  # worth knowing, nothing is at risk
    WARNING = "warning", "Warning"  # degraded or trending badly: works, but needs attention
    CRITICAL = "critical", "Critical"  # failed, unreachable or losing data: something is lost


class AlertState(models.TextChoices):
    """Lifecycle of an alert: OPEN -> CLOSED (recovery); a new occurrence is a new alert."""

    OPEN = "open", "Open"  # the condition holds (or has not been clean long enough)
    CLOSED = "closed", "Closed"  # the condition cleared for long enough; kept as history


class AlertSource(models.TextChoices):
    """What an alert is about (the element whose condition raised it)."""

    DEVICE = "device", "Device"
    LINK = "link", "Link"
    SWITCH = "switch", "Switch"
    HOST = "host", "Host"
    ENCLOSURE = "enclosure", "Enclosure"
    POWER_FEED = "power_feed", "Power feed"
    RACK = "rack", "Rack"  # a manager that reports racks may report one failed
    FABRIC_MANAGER = "fabric_manager", "Fabric manager"  # the manager itself is unreachable


class SampleTarget(models.TextChoices):
    """The elements whose health is sampled at each poll (racks and ports are not: a rack
    has no sensors of its own, a port's health is its owner's or its link's)."""

    DEVICE = "device", "Device"
    LINK = "link", "Link"
    SWITCH = "switch", "Switch"
    HOST = "host", "Host"
    ENCLOSURE = "enclosure", "Enclosure"
    POWER_FEED = "power_feed", "Power feed"


class PowerState(models.TextChoices):
    ON = "on", "On"
    OFF = "off", "Off"
    UNKNOWN = "", "Unknown"  # the manager did not report it
