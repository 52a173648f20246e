"""The test Redfish service's server-sent event stream (EventService.ServerSentEventUri).

A test pushes events (`EventHub.push`), drops the open streams (`drop()`, as a restarting
service would), refuses the next stream request (`refuse_next()`), has the next ones
misbehave (`misbehave_next()`: silent, cut mid-chunk, hung up at once, not a stream), and
reads what clients asked for (`requests`: each stream request's Last-Event-ID, and whether
it was let in). A stream resumes after the Last-Event-ID the client sends, replaying what it
missed, as Redfish specifies.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SSE_PATH = "/redfish/v1/EventService/SSE"
HEARTBEAT_S = 0.5  # a comment line this often, so that a dropped client is noticed


def wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait until `condition()` holds (a stream reader runs on a thread of its own)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@dataclass
class EventHub:
    """Events pushed so far and the streams open on them."""

    history: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    requests: list[dict[str, str]] = field(default_factory=list)
    generation: int = 0
    refusals: int = 0
    misbehaviours: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def push(self, message_id: str, origin: str = "", *, event_type: str = "Other") -> int:
        """Send one Event (one record) to every open stream; returns its id."""
        with self.changed:
            event_id = next(self.counter)
            record: dict[str, Any] = {
                "EventType": event_type,
                "MessageId": message_id,
                "EventId": str(event_id),
            }
            if origin:
                record["OriginOfCondition"] = {"@odata.id": origin}
            body = {
                "@odata.type": "#Event.v1_7_0.Event",
                "Id": str(event_id),
                "Name": "Event",
                "Events": [record],
            }
            self.history.append((event_id, body))
            self.changed.notify_all()
            return event_id

    def refuse_next(self, count: int = 1) -> None:
        """Answer the next `count` stream requests 401, as a service whose session just
        expired would (the client must sign in again)."""
        with self.changed:
            self.refusals += count

    def refused(self) -> bool:
        with self.changed:
            if self.refusals:
                self.refusals -= 1
                return True
            return False

    def misbehave_next(self, kind: str, count: int = 1) -> None:
        """Answer the next `count` stream requests badly: `silent` (a 200 stream that never
        sends a byte, not even a keep-alive, until dropped), `cut` (a chunked stream cut off
        mid-chunk), `hang_up` (a 200 stream closed at once, cleanly), `json` (a 200 whose
        Content-Type is application/json)."""
        assert kind in ("silent", "cut", "hang_up", "json"), kind
        with self.changed:
            self.misbehaviours.extend([kind] * count)

    def _misbehaviour(self) -> str:
        with self.changed:
            return self.misbehaviours.pop(0) if self.misbehaviours else ""

    def drop(self) -> None:
        """Close every open stream (the clients must reconnect)."""
        with self.changed:
            self.generation += 1
            self.changed.notify_all()

    def serve(self, handler: Any, authorised: bool) -> None:
        """Answer one stream request: 401 when not signed in (or refused), else stream."""
        allowed = authorised and not self.refused()
        last = handler.headers.get("Last-Event-ID") or ""
        with self.changed:
            self.requests.append({"last_event_id": last, "allowed": str(allowed)})
        if not allowed:
            return handler._send((401, {"error": {"message": "sign in"}}, {}))
        kind = self._misbehaviour()
        if kind == "json":
            return handler._send((200, {"Events": []}, {}))
        if kind:
            return self.misbehave(handler, kind)
        return self.stream(handler, last)

    def misbehave(self, handler: Any, kind: str) -> None:
        """Serve one bad stream of `kind` (see `misbehave_next`)."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        if kind == "cut":
            handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        if kind == "cut":
            handler.wfile.write(b"40\r\n: keep-alive\n\nid: 1\nda")  # 64 bytes promised
            handler.wfile.flush()
        elif kind == "silent":
            with self.changed:
                generation = self.generation
                while self.generation == generation:
                    self.changed.wait(HEARTBEAT_S)
        # hang_up (and the others, once done): the handler closes the connection

    def stream(self, handler: Any, last_event_id: str) -> None:
        """Serve one stream on `handler` (a BaseHTTPRequestHandler) until dropped."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        try:
            sent = int(last_event_id)
        except ValueError:
            sent = 0
        with self.changed:
            generation = self.generation
        try:
            while True:
                with self.changed:
                    pending = [(i, b) for i, b in self.history if i > sent]
                    if not pending and self.generation == generation:
                        self.changed.wait(HEARTBEAT_S)
                        pending = [(i, b) for i, b in self.history if i > sent]
                    if self.generation != generation:
                        return
                if not pending:
                    handler.wfile.write(b": keep-alive\n\n")
                for event_id, body in pending:
                    handler.wfile.write(f"id: {event_id}\ndata: {json.dumps(body)}\n\n".encode())
                    sent = event_id
                handler.wfile.flush()
        except OSError:
            return  # the client went away
