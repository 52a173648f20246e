"""The fabric's console pages: devices for everyone; hosts, enclosures, switches, racks, power
feeds, links and fabric managers, the topology and failure domains for operators only."""

from __future__ import annotations

from fabric.views.bulk import bulk_maintenance
from fabric.views.components import (
    enclosure_detail,
    enclosure_list,
    host_detail,
    host_list,
    switch_detail,
    switch_list,
)
from fabric.views.devices import device_detail, device_list
from fabric.views.health import maintenance
from fabric.views.links import link_detail, link_list
from fabric.views.manager_edit import (
    manager_create_view,
    manager_delete_view,
    manager_edit_view,
    manager_enabled_view,
    manager_test_entered_view,
    manager_test_view,
)
from fabric.views.managers import manager_detail, manager_list
from fabric.views.racks import power_feed_detail, power_feed_list, rack_detail, rack_list
from fabric.views.topology import failure_domain_list, failure_domain_what_if, topology

__all__ = [
    "bulk_maintenance",
    "device_detail",
    "device_list",
    "enclosure_detail",
    "enclosure_list",
    "failure_domain_list",
    "failure_domain_what_if",
    "host_detail",
    "host_list",
    "link_detail",
    "link_list",
    "maintenance",
    "manager_create_view",
    "manager_delete_view",
    "manager_detail",
    "manager_edit_view",
    "manager_enabled_view",
    "manager_list",
    "manager_test_entered_view",
    "manager_test_view",
    "power_feed_detail",
    "power_feed_list",
    "rack_detail",
    "rack_list",
    "switch_detail",
    "switch_list",
    "topology",
]
