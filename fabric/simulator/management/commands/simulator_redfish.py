"""`manage.py simulator_redfish --fabric demo --port 8001`: serve a simulated fabric as a
Redfish service until stopped (Ctrl-C), for the Redfish driver, browsers and validators.

Sign in with the account of the settings COMPOSER_SIMULATOR_REDFISH_USERNAME and
COMPOSER_SIMULATOR_REDFISH_PASSWORD, or the one given by --username and --password
(whose value is never printed).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fabric.drivers.base import DriverError
from fabric.simulator import store
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import make_server, stop


class Command(BaseCommand):
    help = "Serve a simulated fabric as a DMTF Redfish service (Ctrl-C stops it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fabric", default="demo", help="Simulated fabric name.")
        parser.add_argument("--bind", default="127.0.0.1", help="Address to listen on.")
        parser.add_argument("--port", type=int, default=8001, help="Port to listen on.")
        parser.add_argument("--username", default="", help="Account name (default: settings).")
        parser.add_argument("--password", default="", help="Account password (default: settings).")
        parser.add_argument(
            "--task-after",
            type=float,
            default=None,
            help="Seconds: a system PATCH whose simulated bind latency is at least this is "
            "answered 202 with a task monitor (default: never; 0: always).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            store.fabric_get(options["fabric"])
        except DriverError as exc:
            raise CommandError(str(exc)) from exc
        if options["task_after"] is not None and options["task_after"] < 0:
            raise CommandError("--task-after must be 0 or more seconds.")
        try:
            server = make_server(
                options["fabric"],
                options["bind"],
                options["port"],
                username=options["username"] or None,
                password=options["password"] or None,
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
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            self.stdout.write("Stopped.")
        finally:
            stop(server)
