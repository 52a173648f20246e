"""Live events: record in the database, publish after commit, scope to each audience.

The rule (DESIGN "Events"): every event is first an `Event` row written in the same
transaction as the change it describes; it goes out on the channel layer only after that
transaction commits. The row's id is the replay cursor, so a client that was away asks
for everything after the last id it saw and loses nothing (docs/events.md).

- `event_record()` writes the row and its audience, and publishes on commit (`record`).
  A publish that fails (Redis down) is logged, never raised, and leaves `published_at`
  empty; `events_publish_pending()` (Celery beat) sends those later (`outbox`). Clients
  de-duplicate by id.
- Audience: operators hear every event; a tenant hears an event only through an
  `EventAudience` row, and then only its own part of the payload (`payload_for`, in
  `payloads` with the groups and the payload and message shapes).
- Groups: `operators`, `tenant-<id>`, `composition-<id>`, `job-<id>`; `publish()` is the
  one way to send to one.
- `events_visible(user)` is the one read path (`scope`): the API and the websocket
  replay use it (or `events_for_scope` with a scope they hold).
"""

from __future__ import annotations

from composer.events.outbox import (
    event_layer_messages,
    event_publish,
    events_publish_pending,
    publish,
    publish_many,
)
from composer.events.payloads import (
    OPERATORS_GROUP,
    AlertAcknowledgedPayload,
    AlertInfo,
    BlastRadius,
    BookingOccurrencePayload,
    CompositionRef,
    CompositionStatePayload,
    DeviceHealthPayload,
    EventMessage,
    FabricAlertPayload,
    HealthChange,
    JobProgressPayload,
    LayerMessage,
    blast_radius_for,
    composition_group,
    event_message,
    event_message_text,
    job_group,
    payload_for,
    tenant_group,
)
from composer.events.record import (
    composition_state_record,
    event_record,
    job_last_log_line_id,
    job_progress_record,
)
from composer.events.scope import (
    NOBODY,
    Scope,
    event_ids_recent,
    events_for_scope,
    events_visible,
    newest_event_id,
    scope_for,
)

__all__ = [
    "NOBODY",
    "OPERATORS_GROUP",
    "AlertAcknowledgedPayload",
    "AlertInfo",
    "BlastRadius",
    "BookingOccurrencePayload",
    "CompositionRef",
    "CompositionStatePayload",
    "DeviceHealthPayload",
    "EventMessage",
    "FabricAlertPayload",
    "HealthChange",
    "JobProgressPayload",
    "LayerMessage",
    "Scope",
    "blast_radius_for",
    "composition_group",
    "composition_state_record",
    "event_ids_recent",
    "event_layer_messages",
    "event_message",
    "event_message_text",
    "event_publish",
    "event_record",
    "events_for_scope",
    "events_publish_pending",
    "events_visible",
    "job_group",
    "job_last_log_line_id",
    "job_progress_record",
    "newest_event_id",
    "payload_for",
    "publish",
    "publish_many",
    "scope_for",
    "tenant_group",
]
