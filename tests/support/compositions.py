"""Compositions for tests that need one READY: requested, then composed by its job."""

from __future__ import annotations

from typing import Any

from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from composer.tasks import composition_compose_task


def compose_ready(tenant: Any, user: Any, spec: dict[str, Any], name: str) -> Composition:
    """Request `spec` for `tenant` and run its compose job (eagerly): READY, or the test
    fails with the reason."""
    composition = composition_request(tenant=tenant, requested_by=user, spec=spec, name=name)
    composition_compose_task.delay(
        Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk).pk
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    return composition
