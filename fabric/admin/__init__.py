"""Django admin for the fabric: every model, read-mostly, with sync actions.

Discovered rows belong to inventory sync: the admin shows them but cannot add or delete
them, and only lets an operator move a component in or out of MAINTENANCE. Every change
made through the audited classes writes a ChangeRecord with the operator and their address,
like any service.

One module per topic, so that no module holds every model: `base` (what the classes share),
`managers` (fabric managers and the simulated manager's tables), `inventory` (racks, power
feeds, switches, hosts, enclosures, devices, pools), `topology` (ports, links, failure
domains), `health` (alerts, samples, conditions) and `history` (change records). Django's
admin autodiscovery imports this package, and importing it registers every model. The
fault-injection actions on devices, links, switches, enclosures and power feeds are added
by the optional simulator app (`fabric.simulator.console.admin`) when it is installed.
"""

from __future__ import annotations

from fabric.admin.base import (
    AuditedAdmin,
    DerivedAdmin,
    DiscoveredAdmin,
    ReadOnlyAdmin,
)
from fabric.admin.health import AlertAdmin, HealthConditionAdmin, HealthSampleAdmin
from fabric.admin.history import ChangeRecordAdmin
from fabric.admin.inventory import (
    ComponentAdmin,
    DeviceAdmin,
    EnclosureAdmin,
    HostAdmin,
    PoolAdmin,
    PowerFeedAdmin,
    RackAdmin,
    SwitchAdmin,
)
from fabric.admin.managers import (
    FabricManagerAdmin,
)
from fabric.admin.topology import DeviceDomainAdmin, FailureDomainAdmin, LinkAdmin, PortAdmin

__all__ = [
    "AlertAdmin",
    "AuditedAdmin",
    "ChangeRecordAdmin",
    "ComponentAdmin",
    "DerivedAdmin",
    "DeviceAdmin",
    "DeviceDomainAdmin",
    "DiscoveredAdmin",
    "EnclosureAdmin",
    "FabricManagerAdmin",
    "FailureDomainAdmin",
    "HealthConditionAdmin",
    "HealthSampleAdmin",
    "HostAdmin",
    "LinkAdmin",
    "PoolAdmin",
    "PortAdmin",
    "PowerFeedAdmin",
    "RackAdmin",
    "ReadOnlyAdmin",
    "SwitchAdmin",
]
