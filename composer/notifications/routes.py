"""Notification routes: add, change and delete, each audited.

A route belongs to a tenant or to the operators, and sends to e-mail addresses, to a webhook
of the same owner, or both. What it matches is checked against the rules and kinds of
source the console knows, so a typo is an error naming the field rather than a route that
never fires.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from composer.models import NotificationRoute, Tenant, Webhook
from composer.notifications.access import manage_check
from composer.notifications.audit import Actor, notification_audit, notification_values
from composer.notifications.checks import raise_with_model_checks, save_named
from fabric.choices import AlertSeverity, AlertSource, ChangeAction
from fabric.health.rules import RULES

__all__ = [
    "MAX_EMAILS",
    "emails_clean",
    "route_create",
    "route_delete",
    "route_update",
]

MAX_EMAILS = 20
_KEEP_FIELDS = (
    "name",
    "min_severity",
    "rules",
    "source_types",
    "on_close",
    "emails",
    "webhook",
    "is_enabled",
)


def emails_clean(values: Iterable[Any]) -> list[str]:
    """The addresses, trimmed and de-duplicated (case-blind), each checked; ValidationError
    (field `emails`) naming the first bad one."""
    seen: dict[str, str] = {}
    for value in values:
        if not isinstance(value, str):
            raise ValidationError({"emails": "Each address is a string."})
        address = value.strip()
        if not address:
            continue
        try:
            validate_email(address)
        except ValidationError:
            raise ValidationError(
                {"emails": f"{address[:100]!r} is not an e-mail address."}
            ) from None
        seen.setdefault(address.lower(), address)
    if len(seen) > MAX_EMAILS:
        raise ValidationError({"emails": f"At most {MAX_EMAILS} addresses per route."})
    return list(seen.values())


def _choices(values: Any, allowed: Iterable[str], *, field: str, what: str) -> list[str]:
    if not isinstance(values, list | tuple):
        raise ValidationError({field: f"A list of {what}."})
    known = set(allowed)
    out: list[str] = []
    for value in values:
        if not isinstance(value, str) or value not in known:
            listed = ", ".join(sorted(known))
            raise ValidationError(
                {field: f"{str(value)[:60]!r} is not one of the {what}: {listed}."}
            )
        if value not in out:
            out.append(value)
    return out


def _check(route: NotificationRoute) -> None:
    errors: dict[str, str] = {}
    if not route.name.strip():
        errors["name"] = "Give the route a name."
    if route.min_severity not in AlertSeverity.values:
        errors["min_severity"] = f"One of {', '.join(AlertSeverity.values)}."
    for field, allowed, what in (
        ("rules", RULES, "rules"),
        ("source_types", AlertSource.values, "kinds of source"),
    ):
        try:
            setattr(route, field, _choices(getattr(route, field), allowed, field=field, what=what))
        except ValidationError as exc:
            errors[field] = " ".join(exc.message_dict[field])
    try:
        route.emails = emails_clean(route.emails or [])
    except ValidationError as exc:
        errors["emails"] = " ".join(exc.message_dict["emails"])
    webhook: Webhook | None = route.webhook if route.webhook_id else None
    if webhook is not None and webhook.tenant_id != route.tenant_id:
        errors["webhook"] = "A route sends only to a webhook of its own owner."
    if not route.emails and webhook is None and "emails" not in errors:
        errors["emails"] = "Give at least one e-mail address or a webhook."
    raise_with_model_checks(route, errors, exclude=["rules", "source_types", "emails", "webhook"])


def _save(route: NotificationRoute) -> None:
    save_named(route, "route")


def route_create(
    *,
    tenant: Tenant | None,
    name: str,
    min_severity: str = AlertSeverity.WARNING,
    rules: Any = (),
    source_types: Any = (),
    on_close: bool = True,
    emails: Any = (),
    webhook: Webhook | None = None,
    is_enabled: bool = True,
    actor: Actor,
) -> NotificationRoute:
    """Add a route for `tenant` (None: the operators)."""
    manage_check(actor.user, tenant)
    route = NotificationRoute(
        tenant=tenant,
        name=str(name).strip(),
        min_severity=min_severity,
        rules=list(rules) if isinstance(rules, list | tuple) else rules,
        source_types=list(source_types) if isinstance(source_types, list | tuple) else source_types,
        on_close=on_close,
        emails=list(emails) if isinstance(emails, list | tuple) else emails,
        webhook=webhook,
        is_enabled=is_enabled,
        created_by=actor.user if getattr(actor.user, "pk", None) else None,
    )
    _check(route)
    with transaction.atomic():
        _save(route)
        notification_audit(
            route,
            ChangeAction.ADDED,
            before={},
            after=notification_values(route),
            actor=actor,
            message="notification route added",
        )
    return route


def route_update(
    *, route: NotificationRoute, changes: dict[str, Any], actor: Actor
) -> NotificationRoute:
    """Change the fields named in `changes` (of name, min_severity, rules, source_types,
    on_close, emails, webhook, is_enabled); its owner never changes."""
    manage_check(actor.user, route.tenant_id)
    unknown = set(changes) - set(_KEEP_FIELDS)
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "This field cannot be changed."})
    with transaction.atomic():
        stored = (
            NotificationRoute.objects.select_for_update(of=("self",))
            .select_related("tenant", "webhook")
            .get(pk=route.pk)
        )
        before = notification_values(stored)
        for name, value in changes.items():
            setattr(
                stored, name, value.strip() if name == "name" and isinstance(value, str) else value
            )
        _check(stored)
        _save(stored)
        notification_audit(
            stored,
            ChangeAction.CHANGED,
            before=before,
            after=notification_values(stored),
            actor=actor,
            message="notification route changed",
        )
    return stored


def route_delete(*, route: NotificationRoute, actor: Actor) -> None:
    """Delete a route; its deliveries stay in their webhook's log."""
    manage_check(actor.user, route.tenant_id)
    with transaction.atomic():
        stored = (
            NotificationRoute.objects.select_for_update(of=("self",))
            .select_related("tenant", "webhook")
            .get(pk=route.pk)
        )
        pk, before = stored.pk, notification_values(stored)
        stored.delete()
        notification_audit(
            stored,
            ChangeAction.DELETED,
            before=before,
            after={},
            actor=actor,
            message="notification route deleted",
            target_id=pk,
        )
