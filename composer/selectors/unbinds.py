"""Bindings still to undo, as the device page's holders (registered with `fabric.holders`)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from composer.models import UnbindPending
from fabric.holders import Holder
from fabric.permissions import is_operator

__all__ = ["unbind_holder_rows"]


def unbind_holder_rows(device: Any, user: Any) -> list[Holder]:
    """What holds `device` while its binding is being cleaned up: one row per binding still
    to undo, linking the Reconcile page. Operators only (it names the host); one query."""
    if not is_operator(user):
        return []
    rows = (
        UnbindPending.objects.filter(device=device, undone_at__isnull=True)
        .select_related("host")
        .order_by("since", "pk")
    )
    return [
        Holder(
            name=f"Being cleaned up: still bound to {row.host.name}",
            url=reverse("composer:reconcile_list"),
            state="Being cleaned up",
            gib=row.gib,
        )
        for row in rows
    ]
