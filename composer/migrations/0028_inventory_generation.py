"""The inventory generation (PostgreSQL): a row in composer_inventorychange for every
transaction that writes a table the placement snapshot reads, written by statement triggers
in that very transaction, so that a snapshot kept in memory is reused only while nothing it
was built from has changed (composer.services.snapshot_cache). No model: only that module
reads or writes these tables. Other databases get nothing and never reuse a snapshot."""

from __future__ import annotations

from typing import Any

from django.db import migrations

# Every table the base snapshot reads (tests/composer/services/test_snapshot_cache.py checks
# that the snapshot reads no other), and the ones it reads when scoped or not lean.
TABLES = (
    "composer_allocation",
    "composer_composition",
    "fabric_device",
    "fabric_enclosure",
    "fabric_fabricmanager",
    "fabric_host",
    "fabric_link",
    "fabric_pool",
    "fabric_port",
    "fabric_powerfeed",
    "fabric_rack",
    "fabric_switch",
)

FUNCTION = """
CREATE TABLE composer_inventorychange (id bigserial PRIMARY KEY);
CREATE TABLE composer_inventoryepoch (id smallint PRIMARY KEY, value bigint NOT NULL);
INSERT INTO composer_inventoryepoch VALUES (1, 0);
CREATE FUNCTION composer_inventory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One row per transaction: the flag is local to it (and undone with a savepoint).
    IF current_setting('composer.inventory_changed', true) IS DISTINCT FROM '1' THEN
        INSERT INTO composer_inventorychange DEFAULT VALUES;
        PERFORM set_config('composer.inventory_changed', '1', true);
    END IF;
    RETURN NULL;
END $$;
"""

TRIGGER = """
CREATE TRIGGER composer_inventory_changed
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION composer_inventory_changed();
"""


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION)
    for table in TABLES:
        schema_editor.execute(TRIGGER.format(table=table))


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS composer_inventory_changed ON {table}")
    schema_editor.execute("DROP FUNCTION IF EXISTS composer_inventory_changed()")
    schema_editor.execute("DROP TABLE IF EXISTS composer_inventorychange")
    schema_editor.execute("DROP TABLE IF EXISTS composer_inventoryepoch")


class Migration(migrations.Migration):
    dependencies = [
        ("composer", "0027_booking_over"),
        ("fabric", "0012_rack_units"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
