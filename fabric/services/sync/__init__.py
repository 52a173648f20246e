"""Inventory sync: make the console's tables match what a fabric manager reports.

The console never invents hardware: every Rack, PowerFeed, Switch, Host, Enclosure,
Device, Port and Link row is written here, from `driver.discover()` and
`driver.bindings()`. Rows are matched by (manager, external_id) and handled kind by kind
in dependency order, each kind in its own transaction:

- new ones are added; changed fields are updated; every change writes a ChangeRecord
  with the fields' [before, after];
- rows the manager no longer reports are marked absent (Device/Switch/Host/Enclosure
  `state` ABSENT, Rack/PowerFeed/Port/Link `is_present` False) and never deleted, so their
  history stays readable; rows that come back are RETURNED;
- a device's state follows the manager (FAILED when critical, BOUND when bound whole,
  FREE otherwise) except that an operator's MAINTENANCE is always kept (unless the device
  vanished) and the composer's RESERVED is kept unless the device failed.

Each kind costs a fixed number of queries (one read of the existing rows, bulk writes),
so 10,000 devices sync in seconds and a sync that finds nothing new writes nothing.
"""

from __future__ import annotations

from fabric.services.sync.result import KindCounts, SyncResult
from fabric.services.sync.service import ProgressCallback, inventory_sync

__all__ = ["KindCounts", "ProgressCallback", "SyncResult", "inventory_sync"]
