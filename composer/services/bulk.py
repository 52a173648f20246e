"""Bulk actions on compositions and alerts: several at once, all of them or none.

`compositions_decompose_all` queues one decompose job per composition in one transaction:
one that cannot be decomposed (still binding, held) rolls back the others' transitions and
jobs, and the error names it; the jobs are sent only once that transaction commits.
`alerts_acknowledge_all` acknowledges each (idempotent, so "none" is not needed: an alert
acknowledged meanwhile simply stays as it was). Each change is audited as its own, exactly
as the single action would have recorded it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from composer.errors import ComposerError, InvalidTransition
from composer.models import Composition, Job
from composer.services.compositions import composition_decompose
from fabric.models import Alert
from fabric.services.alerts import alert_acknowledge

BULK_MAX = 200  # the confirmation lists every one


def compositions_decompose_all(
    *, compositions: Sequence[Composition], actor: Any, remote_addr: str | None = None
) -> list[Job]:
    """Queue the decompose job of each of `compositions` (see `composition_decompose`), all
    or none; raises InvalidTransition naming the first that cannot be decomposed."""
    if not compositions:
        raise InvalidTransition("Choose at least one composition.", field="ids")
    if len(compositions) > BULK_MAX:
        raise InvalidTransition(
            f"At most {BULK_MAX} compositions at once; got {len(compositions)}.", field="ids"
        )
    jobs = []
    with transaction.atomic():
        # Locked in id order, whatever order they were ticked in: two bulk decomposes over
        # the same compositions queue behind each other instead of deadlocking.
        for composition in sorted(compositions, key=lambda c: c.pk):
            try:
                jobs.append(
                    composition_decompose(
                        composition=composition, actor=actor, remote_addr=remote_addr
                    )
                )
            except ComposerError as exc:
                raise InvalidTransition(
                    f"{exc.message} Nothing was decomposed.", field="ids"
                ) from exc
    return jobs


def alerts_acknowledge_all(
    *, alerts: Sequence[Alert], user: Any, remote_addr: str | None = None, source: str = "console"
) -> list[Alert]:
    """Acknowledge each of `alerts` (see `alert_acknowledge`); the ones this call
    acknowledged (an alert someone acknowledged first keeps their name)."""
    if len(alerts) > BULK_MAX:
        raise InvalidTransition(
            f"At most {BULK_MAX} alerts at once; got {len(alerts)}.", field="ids"
        )
    with transaction.atomic():
        return [
            alert
            for alert in alerts
            if alert_acknowledge(alert=alert, user=user, remote_addr=remote_addr, source=source)
        ]
