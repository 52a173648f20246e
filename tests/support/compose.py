"""Compose a composition the way a tenant's request does, in tests: request, run the compose
job eagerly, and insist that it came up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from composer.tasks import composition_compose_task


def composed(*, tenant: Any, user: Any, name: str, spec: Mapping[str, Any]) -> Composition:
    """A READY composition of `spec` for `tenant`, requested by `user` (fails the test with
    the reason when it does not come up)."""
    composition = composition_request(tenant=tenant, requested_by=user, spec=spec, name=name)
    composition_compose_task.delay(
        Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk).pk
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    return composition
