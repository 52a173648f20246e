"""`manage.py sim_fault switch cxl-spine-1 fail`: inject a fault into a simulated fabric."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fabric.choices import FaultAction, FaultTarget
from fabric.drivers.base import DriverError
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject


def manager_for(name: str | None) -> FabricManager:
    """The named manager, or the only simulated one when no name is given."""
    if name:
        manager = FabricManager.objects.filter(name=name).first()
        if manager is None:
            raise CommandError(f"No fabric manager named {name!r}.")
        return manager
    simulated = list(FabricManager.objects.filter(driver="simulated")[:2])
    if len(simulated) != 1:
        raise CommandError(
            "Name the fabric manager with --manager "
            f"({'none' if not simulated else 'several'} use the simulated driver)."
        )
    return simulated[0]


class Command(BaseCommand):
    help = (
        "Fail, degrade or recover a device, link, switch, enclosure or power feed of a "
        "simulated fabric. The console sees it at the next inventory sync (or use --sync)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("target_type", choices=FaultTarget.values)
        parser.add_argument("target", help="The element's name or external id.")
        parser.add_argument("action", choices=FaultAction.values)
        parser.add_argument("--manager", help="Fabric manager name (default: the simulated one).")
        parser.add_argument("--sync", action="store_true", help="Run an inventory sync afterwards.")

    def handle(self, *args: Any, **options: Any) -> None:
        manager = manager_for(options["manager"])
        try:
            outcome = fault_inject(
                manager=manager,
                target_type=options["target_type"],
                target_id=options["target"],
                action=options["action"],
                source="manage.py sim_fault",
            )
        except ValidationError as exc:
            raise CommandError(
                "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
            ) from exc
        self.stdout.write(outcome.sentence())
        if options["sync"]:
            try:
                result = inventory_sync(manager=manager, source="manage.py sim_fault")
            except DriverError as exc:
                raise CommandError(f"Inventory sync failed: {exc}") from exc
            self.stdout.write(f"inventory synchronised: {result.summary()}")
