"""Silences: no notification for a rule, an element, or a rule on one element, for a stated
time; made (often from an alert's row), ended early, deleted; each audited.

A silence mutes its owner's routes only. A tenant names an element by an alert it can see
(the element that alert is about): tenants never see the console's ids of fabric elements,
and cannot silence what they were never alerted about. Operators may also name an element
by its kind and id.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from composer.models import AlertAudience, Silence, Tenant
from composer.notifications.access import manage_check
from composer.notifications.audit import Actor, notification_audit, notification_values
from fabric.choices import AlertSource, ChangeAction
from fabric.health.rules import RULES
from fabric.models import Alert

__all__ = [
    "MAX_DURATION",
    "MIN_DURATION",
    "silence_create",
    "silence_delete",
    "silence_end",
]

MIN_DURATION = timedelta(minutes=5)
MAX_DURATION = timedelta(days=90)


def silence_create(
    *,
    tenant: Tenant | None,
    reason: str,
    duration: timedelta | None = None,
    ends_at: datetime | None = None,
    starts_at: datetime | None = None,
    rule: str = "",
    alert: Alert | None = None,
    match_element: bool = False,
    source_type: str = "",
    source_id: int | None = None,
    actor: Actor,
    now: datetime | None = None,
) -> Silence:
    """Silence `rule` (empty: every rule) on an element, for `duration` or until `ends_at`.

    The element is the one `alert` is about when `match_element` (the alert, which the caller
    may see, is also kept to name it), or (operators only) `source_type` and `source_id`.
    With `alert` and no rule and no element, the alert's rule on its element is silenced.
    ValidationError names the field at fault.
    """
    manage_check(actor.user, tenant)
    moment = now or timezone.now()
    start = starts_at or moment
    errors: dict[str, str] = {}
    if rule and rule not in RULES:
        errors["rule"] = f"{rule[:60]!r} is not one of the rules: {', '.join(sorted(RULES))}."
    if (
        alert is not None
        and tenant is not None
        and not AlertAudience.objects.filter(alert=alert, tenant=tenant).exists()
    ):
        errors["alert"] = f"That alert did not concern {tenant.name}."
    elif alert is not None:
        if match_element:
            source_type, source_id = alert.source_type, alert.source_id
        elif not rule and source_id is None:
            rule, source_type, source_id = alert.rule, alert.source_type, alert.source_id
    elif match_element:
        errors["alert"] = "Name the alert whose element is to be silenced."
    if source_id is not None or source_type:
        if tenant is not None and alert is None:
            errors["source_id"] = "A tenant names an element by one of its alerts."
        elif source_type not in AlertSource.values:
            errors["source_type"] = f"One of {', '.join(AlertSource.values)}."
        elif source_id is None or source_id < 1:
            errors["source_id"] = "The id of the element."
    if not rule and source_id is None and not errors:
        errors["rule"] = "Silence a rule, an element, or both; not everything."
    end = ends_at if ends_at is not None else (start + duration if duration is not None else None)
    if end is None:
        errors["duration"] = "Say for how long."
    elif end - start < MIN_DURATION:
        errors["duration"] = "At least 5 minutes."
    elif end - start > MAX_DURATION:
        errors["duration"] = "At most 90 days: a silence is for a stated time."
    elif end <= moment:
        errors["duration"] = "It would be over already."
    if errors:
        raise ValidationError(errors)
    assert end is not None
    silence = Silence(
        tenant=tenant,
        rule=rule,
        source_type=source_type if source_id is not None else "",
        source_id=source_id,
        alert=alert,
        starts_at=start,
        ends_at=end,
        reason=reason.strip(),
        created_by=actor.user if getattr(actor.user, "pk", None) else None,
    )
    try:
        silence.full_clean()
    except ValidationError as exc:
        raise ValidationError(
            {k if k != "__all__" else "rule": v for k, v in exc.message_dict.items()}
        ) from None
    with transaction.atomic():
        silence.save()
        notification_audit(
            silence,
            ChangeAction.ADDED,
            before={},
            after=notification_values(silence),
            actor=actor,
            message=f"silence added: {silence.reason}"[:300],
        )
    return silence


def silence_end(*, silence: Silence, actor: Actor, now: datetime | None = None) -> bool:
    """End a silence now (one not started yet never starts). Returns False when it was over
    already: nothing changes then."""
    manage_check(actor.user, silence.tenant_id)
    moment = now or timezone.now()
    with transaction.atomic():
        stored = (
            Silence.objects.select_for_update(of=("self",))
            .select_related("tenant")
            .get(pk=silence.pk)
        )
        if stored.ends_at <= moment:
            return False
        before = notification_values(stored)
        # The constraint wants the end after the start: one not started yet ends as it starts.
        if stored.starts_at >= moment:
            stored.starts_at = moment - timedelta(microseconds=1)
        stored.ends_at = moment
        stored.ended_by = actor.user if getattr(actor.user, "pk", None) else None
        stored.save(update_fields=["starts_at", "ends_at", "ended_by", "updated_at"])
        notification_audit(
            stored,
            ChangeAction.CHANGED,
            before=before,
            after=notification_values(stored),
            actor=actor,
            message="silence ended early",
        )
    silence.refresh_from_db()
    return True


def silence_delete(*, silence: Silence, actor: Actor) -> None:
    """Delete a silence's record (its audit records stay)."""
    manage_check(actor.user, silence.tenant_id)
    with transaction.atomic():
        stored = (
            Silence.objects.select_for_update(of=("self",))
            .select_related("tenant")
            .get(pk=silence.pk)
        )
        pk, before = stored.pk, notification_values(stored)
        stored.delete()
        notification_audit(
            stored,
            ChangeAction.DELETED,
            before=before,
            after={},
            actor=actor,
            message="silence deleted",
            target_id=pk,
        )
