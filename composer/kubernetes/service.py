"""The controller's loop: lead (when election is on), reconcile, record the pass, wait.

Why apart from `controller`: the loop owns time, leadership and what the console shows of
the controller (`KubernetesController`, on the fabric managers page); the controller owns
one pass. A pass that fails is logged and recorded with its error, and the next one starts
from what the API server and the database say then.

Passes come every `interval` seconds, and at once when the console says the pool may have
changed: the loop watches the event outbox (`composer.models.Event`, ids only ever growing)
for compositions changing state, devices' health, alerts and booked windows, and the audit
trail (`fabric.models.ChangeRecord`) for what tells no live event: a booking made or
cancelled, an element put in maintenance or taken out. So a composition that comes up is
reported to its claim, and a device taken or given back leaves or joins its slice, within a
`watch` period rather than an interval. Both are read from the last id seen, Redis or not;
a row that commits after a later id was seen is caught by the next interval's pass.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections
from django.db.models import Max
from django.utils import timezone

from composer.choices import EventType
from composer.kubernetes.controller import Controller, Report
from composer.kubernetes.leader import Elector
from composer.models import Event, KubernetesClaim, KubernetesController
from fabric.models import ChangeRecord

__all__ = ["Loop", "serve", "serve_once"]

# The console's events after which the pool or a claim's composition may have changed.
WATCHED = (
    EventType.COMPOSITION_STATE,
    EventType.DEVICE_HEALTH,
    EventType.FABRIC_ALERT,
    EventType.BOOKING_OCCURRENCE,
)
# The audited changes (their target types) after which the pool may have changed: a
# booking made or cancelled (an occurrence's changes are recorded on its booking), an element
# put in maintenance or taken out. "device" also wakes the loop on a device's other changes
# (a compose job's own records among them): one pass more, never one less.
WATCHED_CHANGES = ("booking", "device", "enclosure", "switch")

logger = logging.getLogger(__name__)


def serve_once(
    controller: Controller, elector: Elector | None, identity: str, interval: int
) -> Report | None:
    """One pass: the report, or None when another replica leads. Records the pass."""
    report, error = None, ""
    try:
        leader = elector.lead() if elector is not None else True
    except Exception as exc:  # the API server away: no leader this pass, said so
        logger.exception("kubernetes controller: the Lease could not be read or written")
        leader, error = False, f"leader election: {type(exc).__name__}: {exc}"[:2000]
    if leader:
        try:
            report = controller.reconcile()
        except Exception as exc:  # the API server or the database: retried next pass
            logger.exception("kubernetes controller pass failed")
            error = f"{type(exc).__name__}: {exc}"[:2000]
    KubernetesController.objects.update_or_create(
        identity=identity,
        defaults={
            "driver": controller.driver,
            "interval_s": interval,
            "is_leader": leader,
            "last_pass_at": timezone.now(),
            "last_error": error,
            "pools": len(report.pools) if report is not None else 0,
            "claims": KubernetesClaim.objects.filter(
                released_at__isnull=True, composition__isnull=False
            ).count(),
        },
    )
    if report is not None and (report.attached or report.released or report.errors):
        logger.info(
            "kubernetes: composed %s, released %s, refused %s",
            report.attached, report.released, report.errors,
        )  # fmt: skip
    return report


class Loop:
    """When to pass: every `interval` seconds, and at once after a watched event or
    audited change."""

    def __init__(
        self,
        controller: Controller,
        elector: Elector | None,
        identity: str,
        interval: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.controller, self.elector, self.identity = controller, elector, identity
        self.interval, self.clock = interval, clock
        # The last ids seen, read at the first step (the database may be away before).
        self.last_event: int | None = None
        self.last_change: int | None = None
        self.next_pass = 0.0  # the first step passes

    def step(self) -> Report | None:
        """One look at the outbox and the audit trail, and a pass when it is due or what
        they tell calls for one."""
        newest = Event.objects.aggregate(newest=Max("id"))["newest"] or 0
        if self.last_event is None:
            self.last_event = newest
        called = newest > self.last_event and (
            Event.objects.filter(id__gt=self.last_event, id__lte=newest, type__in=WATCHED).exists()
        )
        self.last_event = max(self.last_event, newest)
        changed = ChangeRecord.objects.aggregate(newest=Max("id"))["newest"] or 0
        if self.last_change is None:
            self.last_change = changed
        called = called or (
            changed > self.last_change
            and ChangeRecord.objects.filter(
                id__gt=self.last_change, id__lte=changed, target_type__in=WATCHED_CHANGES
            ).exists()
        )
        self.last_change = max(self.last_change, changed)
        if not called and self.clock() < self.next_pass:
            return None
        self.next_pass = self.clock() + self.interval
        return serve_once(self.controller, self.elector, self.identity, self.interval)


def serve(
    controller: Controller,
    elector: Elector | None,
    identity: str,
    interval: int,
    stop: threading.Event,
    watch: float = 1.0,
) -> None:
    """Pass after pass until `stop` is set, looking at the outbox and the audit trail every
    `watch` seconds."""
    loop = Loop(controller, elector, identity, interval)
    while not stop.is_set():
        close_old_connections()  # a connection the database dropped is opened again
        try:
            loop.step()
        except Exception:  # the database away: logged, and the loop goes on
            logger.exception("kubernetes controller: a step failed")
        stop.wait(watch)
