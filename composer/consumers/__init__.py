"""`/ws/events/`: the live event stream of one browser tab or API client.

Protocol (JSON text frames; docs/events.md has examples):

client -> server
    {"action": "resume", "last_event_id": N, "seen": [ids]?}   replay what came after N
    {"action": "subscribe", "composition": id} | {"action": "subscribe", "job": id}
    {"action": "unsubscribe", "composition": id} | {"action": "unsubscribe", "job": id}

server -> client
    {"type": "hello", "user", "operator", "tenant_ids", "newest_event_id", "heartbeat_s"}
    {"type": "event", "id", "event_type", "at", "composition_id", "job_id", "payload",
     "replay"?}
    {"type": "resumed", "last_event_id", "replayed", "newest_event_id"}
    {"type": "resync", "newest_event_id", "message"}   too much was missed: reload state
    {"type": "subscribed" | "unsubscribed", "composition" | "job": id}
    {"type": "heartbeat", "newest_event_id", "at"}
    {"type": "error", "field", "message"}   a message refused, or no longer allowed
    close 4401: not signed in (or no longer active)
    close 1009: a message over 64 KiB (after an error message saying so); 1007: text
    frames that are not UTF-8 (the server)

Nothing is lost (DESIGN "Events"), because delivery never relies on the live path alone:

- on connect the consumer joins its groups first and then reads the newest event id, so
  every later event reaches it live or is found in the database;
- `resume` replays from the database (scoped) what came after the client's last id;
- every heartbeat replays from the database whatever this connection has not been sent
  since (a Redis restart drops live messages; the pub/sub layer re-subscribes by itself)
  and re-reads the user's scope, so a removed membership stops the flow.

Each event is sent once per connection (ids are remembered for a while), and every
message is re-checked against the connection's tenants before it is sent.
"""

from __future__ import annotations

from composer.consumers.stream import EventsConsumer

__all__ = ["EventsConsumer"]
