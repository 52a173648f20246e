"""`manage.py simulator_redfish --fabric demo --port 8001`: serve a simulated fabric as a
Redfish service until stopped (Ctrl-C), for the Redfish driver, browsers and validators.

Sign in with the account of the settings COMPOSER_SIMULATOR_REDFISH_USERNAME and
COMPOSER_SIMULATOR_REDFISH_PASSWORD (--username overrides the name). The password is read
from the environment only, never from the command line (where `ps` and shell history
would show it), and never printed; the demo's default password is refused on any address
but the loopback. `--create` first writes the fabric as a small lab world
(LAB) when it does not exist yet: `make run` serves its Redfish lab so.
"""

from __future__ import annotations

import ipaddress
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fabric.drivers.base import DriverError
from fabric.simulator import store
from fabric.simulator.builder import WorldSpec, world_write
from fabric.simulator.redfish.auth import DEFAULT_PASSWORD, credentials
from fabric.simulator.redfish.server import make_server, stop

# A world small enough to read at a glance: one rack, 4 hosts, 8 GPUs in two chassis,
# 2 TiB of CXL memory, a JBOF of 4 drives and 2 NICs, behind a leaf and two spines.
LAB = WorldSpec(
    racks=1,
    hosts=4,
    gpu_enclosures=2,
    gpus_per_enclosure=4,
    memory_boxes=1,
    memory_devices_per_box=2,
    memory_box_gib=2048,
    jbofs=1,
    drives_per_jbof=4,
    nics=2,
    nics_per_chassis=2,
    ports_per_switch=16,
    seed=8001,
)


def _loopback(address: str) -> bool:
    """Whether only this machine can reach `address` (a name such as localhost counts when
    it is one; anything that is not an address of the loopback does not)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class Command(BaseCommand):
    help = "Serve a simulated fabric as a DMTF Redfish service (Ctrl-C stops it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fabric", default="demo", help="Simulated fabric name.")
        parser.add_argument("--bind", default="127.0.0.1", help="Address to listen on.")
        parser.add_argument("--port", type=int, default=8001, help="Port to listen on.")
        parser.add_argument("--username", default="", help="Account name (default: settings).")
        parser.add_argument(
            "--create",
            action="store_true",
            help="Write the fabric as a small lab world first when it does not exist yet.",
        )
        parser.add_argument(
            "--task-after",
            type=float,
            default=None,
            help="Seconds: a system PATCH whose simulated bind latency is at least this is "
            "answered 202 with a task monitor (default: never; 0: always).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["task_after"] is not None and options["task_after"] < 0:
            raise CommandError("--task-after must be 0 or more seconds.")
        if not _loopback(options["bind"]) and credentials()["password"] == DEFAULT_PASSWORD:
            raise CommandError(
                f"Refusing to serve on {options['bind']} with the demo password: set "
                "COMPOSER_SIMULATOR_REDFISH_PASSWORD, or bind to 127.0.0.1."
            )
        try:
            store.fabric_get(options["fabric"])
        except DriverError as exc:
            if not options["create"]:
                raise CommandError(str(exc)) from exc
            world_write(fabric_name=options["fabric"], spec=LAB)
            self.stdout.write(f"Wrote the lab world as simulated fabric {options['fabric']!r}.")
        try:
            server = make_server(
                options["fabric"],
                options["bind"],
                options["port"],
                username=options["username"] or None,
                task_after_s=options["task_after"],
            )
        except OSError as exc:
            raise CommandError(
                f"Cannot listen on {options['bind']}:{options['port']} ({exc.strerror})."
            ) from exc
        host, port = server.server_address[:2]
        username = options["username"] or credentials()["username"]
        self.stdout.write(
            f"Simulated fabric {options['fabric']!r} served as Redfish at http://{host!s}:{port}"
            f"/redfish/v1/ (sign in as {username!r}); Ctrl-C stops it."
        )
        # Ctrl-C stops it even when started with SIGINT ignored (a shell's background job
        # ignores it, and Python then never raises KeyboardInterrupt).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            self.stdout.write("Stopped.")
        finally:
            stop(server)
