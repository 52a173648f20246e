"""The controller's loop: lead (when election is on), reconcile, record the pass, wait.

Why apart from `controller`: the loop owns time, leadership and what the console shows of
the controller (`KubernetesController`, on the fabric managers page); the controller owns
one pass. A pass that fails is logged and recorded with its error, and the next one starts
from what the API server and the database say then.
"""

from __future__ import annotations

import logging
import threading

from django.db import close_old_connections
from django.utils import timezone

from composer.kubernetes.controller import Controller, Report
from composer.kubernetes.leader import Elector
from composer.models import KubernetesClaim, KubernetesController

__all__ = ["serve", "serve_once"]

logger = logging.getLogger(__name__)


def serve_once(
    controller: Controller, elector: Elector | None, identity: str, interval: int
) -> Report | None:
    """One pass: the report, or None when another replica leads. Records the pass."""
    leader = elector.lead() if elector is not None else True
    report, error = None, ""
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


def serve(
    controller: Controller,
    elector: Elector | None,
    identity: str,
    interval: int,
    stop: threading.Event,
) -> None:
    """Pass after pass, `interval` seconds apart, until `stop` is set."""
    while not stop.is_set():
        close_old_connections()  # a connection the database dropped is opened again
        serve_once(controller, elector, identity, interval)
        stop.wait(interval)
