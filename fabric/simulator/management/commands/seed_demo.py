"""`manage.py seed_demo`: the simulated demo data centre, its users and tenants, idempotently."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from composer.counterfactual.machine_spec import RELATIVE
from composer.demo_users import demo_logins
from fabric.drivers.base import DriverError
from fabric.simulator.builder import WorldSpec
from fabric.simulator.console.demo import demo_seed

# (option, WorldSpec field, help); defaults come from WorldSpec, i.e. the demo.
SIZE_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("--racks", "racks", "racks, each with two power feeds"),
    ("--hosts", "hosts", "compute hosts in all"),
    ("--gpu-enclosures", "gpu_enclosures", "GPU chassis in all"),
    ("--gpus-per-enclosure", "gpus_per_enclosure", "GPUs per chassis (half H100, half L40S)"),
    ("--memory-boxes", "memory_boxes", "CXL memory boxes in all"),
    ("--memory-devices-per-box", "memory_devices_per_box", "CXL memory devices per box"),
    ("--memory-box-gib", "memory_box_gib", "GiB of CXL memory per box"),
    ("--jbofs", "jbofs", "NVMe JBOFs in all"),
    ("--drives-per-jbof", "drives_per_jbof", "7.68 TB NVMe drives per JBOF"),
    ("--nics", "nics", "400G NICs in all (in I/O chassis)"),
    ("--nics-per-chassis", "nics_per_chassis", "NICs per I/O chassis"),
    ("--ports-per-switch", "ports_per_switch", "x16 ports per CXL switch"),
    ("--seed", "seed", "random seed for serial numbers and latencies"),
)


class Command(BaseCommand):
    help = (
        "Create or converge the demo data centre: a simulated fabric (default: 2 racks, 4 CXL "
        "switches, 16 hosts, 64 GPUs, 8 x 2 TiB CXL memory boxes, 4 JBOFs, 16 NICs), its "
        f"fabric manager, the demo tenants and logins ({demo_logins()}), default pools, and "
        "an inventory sync. Safe to run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = WorldSpec()
        for flag, name, text in SIZE_OPTIONS:
            parser.add_argument(
                flag,
                dest=name,
                type=int,
                default=getattr(defaults, name),
                help=f"{text} (default {getattr(defaults, name)})",
            )
        parser.add_argument(
            "--devices",
            type=int,
            default=None,
            help="Instead of the sizes above, generate a world of exactly N devices "
            "(e.g. 10000, for benchmarks).",
        )
        parser.add_argument("--manager", default="demo", help="Fabric manager name (default demo).")
        parser.add_argument(
            "--fabric", default="demo", help="Simulated fabric name (default demo)."
        )
        parser.add_argument(
            "--no-sync", action="store_true", help="Do not run the inventory sync (nor make pools)."
        )
        parser.add_argument("--no-users", action="store_true", help="Do not create demo users.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["devices"] is not None:
                spec = WorldSpec.for_device_count(options["devices"], seed=options["seed"])
            else:
                spec = WorldSpec(**{name: options[name] for _, name, _ in SIZE_OPTIONS})
            spec.validate()
        except ValueError as exc:
            raise CommandError(str(exc)) from exc

        def progress(done: int, total: int, message: str) -> None:
            if options["verbosity"] >= 2:
                self.stdout.write(f"  [{done}/{total}] {message}")

        try:
            result = demo_seed(
                spec=spec,
                manager_name=options["manager"],
                fabric_name=options["fabric"],
                sync=not options["no_sync"],
                users=not options["no_users"],
                on_progress=progress,
            )
        except (ValueError, DriverError) as exc:
            raise CommandError(str(exc)) from exc

        world = result.world
        self.stdout.write(
            f"Simulated fabric {options['fabric']!r}: {spec.device_count} devices; "
            f"{world.created} elements created, {world.updated} updated, {world.removed} removed."
        )
        self.stdout.write(
            f"Fabric manager {result.manager.name!r}: "
            f"{'created or updated' if result.manager_changed else 'unchanged'}."
        )
        if not options["no_users"]:
            created = ", ".join(result.users_created) or "none"
            source = "default" if settings.COMPOSER_DEMO_PASSWORD == "demo" else "set"
            self.stdout.write(
                f"Demo logins: {demo_logins()}; created {created}; "
                f"password from COMPOSER_DEMO_PASSWORD ({source})."
            )
        if result.server_shapes is not None:
            shapes = result.server_shapes
            self.stdout.write(
                f"Server shapes (Alibaba PAI machine list): {len(shapes.added)} added, "
                f"{len(shapes.changed)} updated."
            )
        else:
            self.stdout.write(
                f"Server shapes: no machine list at {RELATIVE} beside the repository "
                "(or COMPOSER_SERVER_SHAPES_CSV); none seeded."
            )
        if result.sync is not None:
            self.stdout.write(f"Inventory sync: {result.sync.summary()}.")
            self.stdout.write(
                f"Pools: {len(result.pools_created)} created; "
                f"{result.devices_moved} devices changed pool."
            )
        else:
            self.stdout.write(
                "Inventory sync skipped (--no-sync); pools are made by the next seed_demo."
            )
