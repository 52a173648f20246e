"""An optional driver capability: events the fabric manager pushes, as hints to poll.

Why optional and apart from FabricDriver: most managers push nothing, and the console never
needs events to be right. A pushed event only says "look now": the listener
(fabric.health.listen) asks for a health poll of that manager, and the poll, as always,
reads the truth. A driver offers events by having `event_stream`; one without it (the
simulated one, say) is polled on its interval as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fabric.drivers.base import DriverError


@dataclass(frozen=True, slots=True)
class DriverEvent:
    """One event as the manager pushed it.

    `event_id` is what a reconnect resumes after (empty when the manager numbers none);
    `health_relevant` whether it may change what a health poll reads (a status change,
    something added, removed or changed, an alert); `origin` the element it names, and
    `message_id` the manager's message, for logs. `opened` marks STREAM_OPENED, no event
    of the manager's: a source yields it first, once its stream is open, so that the
    listener knows when it began to hear (a source without it is taken to be open at its
    first event)."""

    event_id: str
    health_relevant: bool
    origin: str = ""
    message_id: str = ""
    opened: bool = False


STREAM_OPENED = DriverEvent(
    event_id="", health_relevant=False, message_id="stream opened", opened=True
)


class EventsNotOffered(DriverError):
    """The manager pushes no events (or not in a way this driver reads): poll only."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


@runtime_checkable
class EventSource(Protocol):
    """What a driver that reads pushed events has besides the FabricDriver methods."""

    def event_stream(self, *, last_event_id: str = "") -> Iterator[DriverEvent]:
        """Open the manager's event stream (resuming after `last_event_id`) and yield its
        events as they come. Returns when the manager closes the stream; raises
        EventsNotOffered when it offers none, DriverError when it cannot be read."""
        ...

    def close_event_stream(self) -> None:
        """Close the stream open in another thread (best effort), ending its iteration."""
        ...


def event_source(driver: Any) -> EventSource | None:
    """The driver as an event source, or None where it offers no events."""
    return driver if isinstance(driver, EventSource) else None
