"""Who hears which events: a user's scope, and the one read path (`events_visible`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Max, QuerySet

from composer.events.payloads import payload_for
from composer.models import Event, EventAudience, Membership
from fabric.permissions import is_operator

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser, AnonymousUser


@dataclass(frozen=True)
class Scope:
    """Whose events a user hears: every event (operator) or its tenants' (member)."""

    user_id: int | None
    operator: bool
    tenant_ids: frozenset[int]

    def hears(self, tenant_id: int | None) -> bool:
        """May a message cut for `tenant_id` (None: the full payload) go to this user?

        Operators take only full payloads (they are sent on `operators`); members only what
        was cut for one of their tenants.
        """
        if self.operator:
            return tenant_id is None
        return tenant_id is not None and tenant_id in self.tenant_ids

    def payload(self, event: Event) -> dict[str, Any] | None:
        """The event's payload as this user may see it (None: not at all)."""
        if self.operator:
            return dict(event.payload)
        return payload_for(event, tenant_id=self.tenant_ids)


NOBODY = Scope(user_id=None, operator=False, tenant_ids=frozenset())


def scope_for(user: AbstractUser | AnonymousUser | None) -> Scope:
    """The user's scope now (one query for a member: its memberships)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return NOBODY
    if is_operator(user):
        return Scope(user_id=user.pk, operator=True, tenant_ids=frozenset())
    tenant_ids = Membership.objects.filter(user_id=user.pk).values_list("tenant_id", flat=True)
    return Scope(user_id=user.pk, operator=False, tenant_ids=frozenset(tenant_ids))


def events_for_scope(scope: Scope) -> QuerySet[Event]:
    """Events a scope hears, oldest first: all for operators, audience rows for members."""
    if scope.operator:
        return Event.objects.order_by("id")
    if not scope.tenant_ids:
        return Event.objects.none()
    heard = EventAudience.objects.filter(tenant_id__in=scope.tenant_ids).values("event_id")
    return Event.objects.filter(pk__in=heard).order_by("id")


def events_visible(user: AbstractUser | AnonymousUser | None, *, since: int = 0) -> QuerySet[Event]:
    """Events `user` may see with an id above `since`, oldest first.

    Operators see every event; tenant members the events with an audience row for one of
    their tenants; anyone else nothing (`scope_for` + `events_for_scope`: one rule for the
    API, the websocket replay and everything else). Payloads still go through
    `Scope.payload` (`payload_for`) before they reach a member.
    """
    return events_for_scope(scope_for(user)).filter(pk__gt=since)


def newest_event_id(scope: Scope) -> int:
    """The newest event id the scope may see (0 when none)."""
    if scope.operator:
        return Event.objects.aggregate(newest=Max("id"))["newest"] or 0
    if not scope.tenant_ids:
        return 0
    newest = EventAudience.objects.filter(tenant_id__in=scope.tenant_ids).aggregate(
        newest=Max("event_id")
    )["newest"]
    return newest or 0


def event_ids_recent(scope: Scope, *, since: Any, limit: int) -> list[int]:
    """Ids of the events the scope may see that were recorded at or after `since`.

    Transactions commit out of id order: an event with a lower id than one already sent
    may still appear for a few seconds, so catch-ups look back this far besides looking
    past their cursor (docs/events.md, "Replay").
    """
    return list(events_for_scope(scope).filter(at__gte=since).values_list("id", flat=True)[:limit])
