"""`manage.py seed_history`: a week of the demo data centre's past, lived through the
product on a simulated clock (fabric.simulator.console.history), once."""

from __future__ import annotations

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from composer.errors import ComposerError
from fabric.drivers.base import DriverError
from fabric.simulator.console.history import demo_history


class Command(BaseCommand):
    help = (
        "Live the demo data centre's last days on a simulated clock through the product's "
        "own services: Acme's day/night bookings (training-8gpu on weekdays 08:00-20:00, "
        "inference-2gpu-bigmem every night) composed and decomposed by the booking clock, "
        "the tenants' compositions coming and going, a utilisation sample at every step. "
        "Run after seed_demo; does nothing once Acme's schedule is booked."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=7, help="Days of history (default 7).")
        parser.add_argument(
            "--step-minutes",
            type=int,
            default=10,
            help="Minutes between the clock's steps, each a booking tick and a utilisation "
            "sample (default 10), before the last hours lived minute by minute.",
        )
        parser.add_argument(
            "--minute-hours",
            type=int,
            default=24,
            help="The last hours, lived minute by minute as the day view reads them (default 24).",
        )
        parser.add_argument("--seed", type=int, default=7, help="Random seed (default 7).")

    def handle(self, *args: Any, **options: Any) -> None:
        def progress(done: int, total: int, message: str) -> None:
            if options["verbosity"] >= 1:
                self.stdout.write(f"  history: {message} ({done}/{total} steps)")

        # The jobs of a week log thousands of lines; the summary says what happened.
        if options["verbosity"] < 2:
            logging.disable(logging.INFO)
        try:
            result = demo_history(
                days=options["days"],
                step_minutes=options["step_minutes"],
                minute_hours=options["minute_hours"],
                seed=options["seed"],
                on_progress=progress,
            )
        except (ValueError, ComposerError, DriverError) as exc:
            raise CommandError(str(exc)) from exc
        finally:
            logging.disable(logging.NOTSET)
        self.stdout.write(f"Demo history: {result.summary()}.")
