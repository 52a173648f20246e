"""`manage.py sim_operation_fault bind transient --count 2`: make simulated calls fail."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fabric.drivers.base import DriverError
from fabric.simulator import store


class Command(BaseCommand):
    help = (
        "Make the next N calls of one simulated-manager operation fail (transient, permanent "
        "or timeout), or clear that with --count 0. For demos of retries and rollbacks."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("operation", choices=store.OPERATIONS)
        parser.add_argument("mode", choices=store.FAULT_MODES)
        parser.add_argument("--count", type=int, default=1, help="How many calls fail (0 clears).")
        parser.add_argument("--fabric", default="demo", help="Simulated fabric name.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            fabric = store.fabric_get(options["fabric"])
            store.operation_fault_set(
                fabric=fabric,
                operation=options["operation"],
                mode=options["mode"],
                count=options["count"],
            )
        except (DriverError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{fabric.name}: next {options['count']} {options['operation']} call(s) "
            f"{options['mode']}"
            if options["count"]
            else f"{fabric.name}: cleared"
        )
