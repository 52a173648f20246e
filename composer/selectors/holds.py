"""The holds a user may see: the reservations a Redfish client lists (`PreviewReserve`)."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from composer.choices import CompositionState
from composer.models import Allocation, Composition

__all__ = ["composition_holds_for_user"]


def composition_holds_for_user(*, user: Any) -> QuerySet[Composition]:
    """The held compositions `user` may see (operators: every tenant's; members: their
    tenants' only), soonest to lapse first, with their host and the devices they hold."""
    held = Allocation.objects.filter(released_at__isnull=True).select_related("device")
    return (
        Composition.objects.for_user(user)
        .filter(state=CompositionState.HELD)
        .select_related("tenant", "host")
        .prefetch_related(Prefetch("allocations", queryset=held.order_by("pk")))
        .order_by("hold_expires_at", "pk")
    )
