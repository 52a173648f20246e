"""`manage.py fabric_events`: listen to the fabric managers' pushed events, poll on each.

A process of its own (started by `make run`; in production run one or more beside the
workers): a stream is held open for as long as the manager keeps it, which neither a Celery
task (time limits, acks) nor a web process is for. The listening itself is
fabric.health.listen; this command wires a hint to the console's health poll request (the
poll queued at once, and recorded so that beat polls the manager if the queue is away).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from composer.services.health_poll import health_poll_request
from fabric.health.listen import Supervisor
from fabric.models import FabricManager


def poll_now(manager_id: int) -> None:
    """A hint from a manager's events: ask for a health poll of it now."""
    manager = FabricManager.objects.filter(pk=manager_id, is_enabled=True).first()
    if manager is not None:
        health_poll_request(manager=manager)


class Command(BaseCommand):
    help = "Listen to the fabric managers' pushed events; each health event polls at once."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--debounce", type=float, default=1.0, help="seconds a burst is folded into one poll"
        )
        parser.add_argument(
            "--refresh", type=float, default=15.0, help="seconds between reads of the managers"
        )
        parser.add_argument(
            "--min-interval",
            type=float,
            default=float(getattr(settings, "COMPOSER_HEALTH_EVENT_POLL_MIN_S", 15)),
            help="least seconds between two event-driven polls of one manager (an event "
            "storm); default COMPOSER_HEALTH_EVENT_POLL_MIN_S",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        Supervisor(
            on_hint=poll_now,
            debounce_s=options["debounce"],
            refresh_s=options["refresh"],
            min_interval_s=options["min_interval"],
        ).run(stop)
