"""The base placement snapshot kept in memory while the inventory has not changed.

Why: building the snapshot reads every device, host, enclosure, switch and link and every
allocation (about half a second at 10,000 devices), while most decisions (a booking's
admission above all) come between changes. So `snapshot_reused` keeps the last snapshot
per database and process, keyed on the inventory generation, and builds again only when
the generation has moved.

The generation is written by the database itself (migration 0028, PostgreSQL): a statement
trigger on every table the snapshot reads adds a row to `composer_inventorychange` in the
transaction that writes the table (one row per transaction), so no code path can change
the inventory without moving it, and the row is visible exactly when the change is. The key
is (epoch, the last row's id, the number of rows) read in one statement: rows are only ever
added within an epoch, so the count grows with every committed change and an equal key
means the same committed changes. Old rows are pruned by a rebuild that counts more than
`PRUNE_AT`, and hourly by the beat (`inventory_changes_prune`: health polls and syncs
write the inventory while nobody places, and nothing else would prune then); the prune
moves the epoch in the same transaction, so no key of before equals one of after.

The key is read before the snapshot is built, so a kept snapshot is never older than its
key (at worst newer: a change committed meanwhile moved the generation, and the next
caller builds again). A transaction that has written such a table itself (the trigger's
flag, local to the transaction) neither reuses nor keeps a snapshot: its own changes are
not committed, and the flag leaves no row to count a second change by. Other databases
than PostgreSQL have no triggers: every snapshot is built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import connection, transaction

from composer.placement.snapshot import Snapshot

__all__ = [
    "PRUNE_AT",
    "inventory_changes_prune",
    "inventory_generation",
    "snapshot_forget",
    "snapshot_reused",
]

# Rows of composer_inventorychange past which a rebuild prunes them (the key's count stays
# a cheap index scan).
PRUNE_AT = 1000

Generation = tuple[int, int | None, int]  # epoch, last change's id, changes counted

_kept: dict[str, tuple[Generation, Snapshot]] = {}  # database name -> (key, snapshot)
_kept_lock = threading.Lock()


def inventory_generation() -> Generation | None:
    """The inventory generation this statement sees, or None when a snapshot may not be
    reused: not PostgreSQL, or this transaction changed the inventory itself."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT value FROM composer_inventoryepoch WHERE id = 1), max(id), "
            "count(*), current_setting('composer.inventory_changed', true) "
            "FROM composer_inventorychange"
        )
        row = cursor.fetchone()
    assert row is not None
    epoch, last, count, changed_here = row
    if changed_here == "1":
        return None
    return int(epoch), last, int(count)


def snapshot_reused(build: Callable[[], Snapshot]) -> Snapshot:
    """The snapshot `build` makes, reused from the last call while the inventory generation
    has not moved. `build` must read only the tables the generation's triggers watch; the
    snapshot returned is shared, and like every snapshot must never be mutated (its memo
    only ever gains what its own contents determine)."""
    key = inventory_generation()
    if key is None:
        return build()
    database = str(connection.settings_dict["NAME"])
    with _kept_lock:
        kept = _kept.get(database)
    if kept is not None and kept[0] == key:
        return kept[1]
    snapshot = build()
    with _kept_lock:
        _kept[database] = (key, snapshot)
    if key[2] > PRUNE_AT:
        _prune(key)
    return snapshot


def snapshot_forget() -> None:
    """Forget every kept snapshot (tests; never needed for correctness)."""
    with _kept_lock:
        _kept.clear()


def inventory_changes_prune() -> int:
    """Prune the generation's rows when more than `PRUNE_AT` have piled up, as a rebuild
    would; how many went. Past that many changes every kept snapshot is stale anyway, so
    the epoch it moves costs no rebuild that the changes had not already made due."""
    with transaction.atomic():
        key = inventory_generation()
        if key is None or key[2] <= PRUNE_AT:
            return 0
        return _prune(key)


def _prune(key: Generation) -> int:
    """Delete the rows counted in `key` and move the epoch, in the caller's transaction;
    how many rows went. The flag marks the transaction as one that changed the generation,
    so that nothing it builds afterwards is kept under a key that a rollback would make
    reachable again."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('composer.inventory_changed', '1', true)")
        cursor.execute("UPDATE composer_inventoryepoch SET value = value + 1 WHERE id = 1")
        cursor.execute("DELETE FROM composer_inventorychange WHERE id <= %s", [key[1]])
        return int(cursor.rowcount)
