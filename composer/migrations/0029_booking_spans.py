"""GiST indexes of the windows of holds and occurrences (PostgreSQL), for the admission's
read of what overlaps its windows (`composer.selectors.bookings.booked_between` with
`windows`): a B-tree on one end of a window cannot bound an overlap from both sides, so
the read would scan every hold ending after the first window. Other databases scan."""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEXES = (
    ("composer_hold_span", "composer_bookinghold"),
    ("composer_occurrence_span", "composer_occurrence"),
)


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, table in INDEXES:
        schema_editor.execute(
            f"CREATE INDEX {name} ON {table} USING gist (tstzrange(starts_at, ends_at, '[)'))"
        )


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, _ in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("composer", "0028_inventory_generation")]

    operations = [migrations.RunPython(forwards, backwards)]
