"""The fabric's models, re-exported so callers import from `fabric.models`."""

from __future__ import annotations

from fabric.models.devices import FabricManager, Port, Switch
from fabric.models.domains import DeviceDomain, FailureDomain
from fabric.models.health import Alert, HealthCondition, HealthSample
from fabric.models.history import ChangeRecord
from fabric.models.inventory import Device, Enclosure, Host, Pool, PowerFeed, Rack
from fabric.models.links import LINK_END_OWNERS, Link

__all__ = [
    "LINK_END_OWNERS",
    "Alert",
    "ChangeRecord",
    "Device",
    "DeviceDomain",
    "Enclosure",
    "FabricManager",
    "FailureDomain",
    "HealthCondition",
    "HealthSample",
    "Host",
    "Link",
    "Pool",
    "Port",
    "PowerFeed",
    "Rack",
    "Switch",
]
