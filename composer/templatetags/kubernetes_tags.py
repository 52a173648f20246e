"""The Kubernetes controllers' card on the fabric managers page (fabric's templates load it:
fabric's Python never imports composer)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import template
from django.utils import timezone

from composer.models import KubernetesController

register = template.Library()

# A controller is stale once it has missed this many passes.
MISSED_PASSES = 3


@register.inclusion_tag("composer/_kubernetes_controllers.html")
def kubernetes_controllers() -> dict[str, Any]:
    """Each controller that has run, and whether it is alive: a pass within three of its
    intervals, and none failing. Nothing is shown where none ever ran."""
    now = timezone.now()
    rows = []
    for controller in KubernetesController.objects.all():
        stale = controller.last_pass_at is None or controller.last_pass_at < now - timedelta(
            seconds=MISSED_PASSES * max(controller.interval_s, 1)
        )
        status = "stale" if stale else "failing" if controller.last_error else "ok"
        rows.append({"controller": controller, "status": status})
    return {"rows": rows}
