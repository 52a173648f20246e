"""The event log: what happened, in order, and who may hear of it.

Every event the console pushes to browsers and API clients is first a row here, written in
the same transaction as the change it describes; it is published over the channel layer
only after that transaction commits (`composer.events`). The row's id is the cursor a
reconnecting client sends back ("the last event I saw"), so replay is a plain query and
nothing is lost across a websocket drop, a web-process restart or a Redis restart.

Audience: operators hear every event; a tenant hears an event only through an
EventAudience row naming it (an alert that hurts two tenants' compositions has two). The
payload carries ids and states, never HTML or secrets; what a tenant is sent of it is cut
down to that tenant's own objects by `composer.events.payload_for`.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from composer.choices import EventType


class Event(models.Model):
    """One published fact (`type` + `payload`), numbered by its id."""

    type = models.CharField(max_length=40, choices=EventType.choices)
    at = models.DateTimeField(default=timezone.now)
    payload = models.JSONField(default=dict)
    # Routing: the composition or job the event is about, for their subscription groups.
    composition = models.ForeignKey(
        "composer.Composition",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="events",
    )
    job = models.ForeignKey(
        "composer.Job", null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    # Set once the event went out on the channel layer; the republish sweep sends the rest.
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["published_at", "id"], name="composer_event_unpublished"),
            models.Index(fields=["at"], name="composer_event_at"),
        ]

    def __str__(self) -> str:
        return f"event {self.pk} {self.type}"


class EventAudience(models.Model):
    """A tenant that may hear of an event (operators hear every event without a row)."""

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="audience")
    tenant = models.ForeignKey(
        "composer.Tenant", on_delete=models.CASCADE, related_name="event_audience"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event", "tenant"], name="composer_event_audience_once")
        ]
        indexes = [models.Index(fields=["tenant", "event"], name="composer_event_tenant")]

    def __str__(self) -> str:
        return f"event {self.event_id} -> tenant {self.tenant_id}"


class AlertAudience(models.Model):
    """A tenant whose compositions an alert hurt when it opened: the tenant may see it.

    Fabric alerts know no tenants (fabric never imports composer); the blast radius stored
    on the alert names them in JSON, which no database indexes the same way. This row,
    written with the alert's event, is what `alerts` pages and the API filter on.
    """

    alert = models.ForeignKey("fabric.Alert", on_delete=models.CASCADE, related_name="audience")
    tenant = models.ForeignKey(
        "composer.Tenant", on_delete=models.CASCADE, related_name="alert_audience"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["alert", "tenant"], name="composer_alert_audience_once")
        ]
        indexes = [models.Index(fields=["tenant", "alert"], name="composer_alert_tenant")]

    def __str__(self) -> str:
        return f"alert {self.alert_id} -> tenant {self.tenant_id}"


class ChangeAudience(models.Model):
    """A tenant whose own thing (a quota) a ChangeRecord is about: its members may read it.

    The fabric's ChangeRecord knows no tenants (fabric never imports composer). This row,
    written in the same transaction as the record (`composer.services.changes`), is what the
    audit page's scoping filters on, so a quota's deletion stays visible to its tenant after
    the quota is gone.
    """

    record = models.ForeignKey(
        "fabric.ChangeRecord", on_delete=models.CASCADE, related_name="audience"
    )
    tenant = models.ForeignKey(
        "composer.Tenant", on_delete=models.CASCADE, related_name="change_audience"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["record", "tenant"], name="composer_change_audience_once"
            )
        ]
        indexes = [models.Index(fields=["tenant", "record"], name="composer_change_tenant")]

    def __str__(self) -> str:
        return f"change {self.record_id} -> tenant {self.tenant_id}"
