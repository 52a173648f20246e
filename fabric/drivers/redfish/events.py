"""A Redfish service's server-sent events (EventService.ServerSentEventUri), read as hints.

Why SSE and not a push subscription: a subscription needs the service to reach the console
(a listening URL, firewalls), while a stream is a request the console makes, over the same
signed-in session as every other call (X-Auth-Token, or HTTP Basic where the service has no
sessions). A 401 on opening the stream signs in again once, as every request does; a stored
token that is refused is final. The stream resumes after the last event id it saw
(Last-Event-ID), so a reconnect misses nothing the service still holds.

Which events matter to health: ResourceEvent registry messages that change what a poll reads
(ResourceStatusChanged*, ResourceChanged, ResourceAdded, ResourceCreated, ResourceRemoved,
ResourceStateChanged...), the old event types for the same (StatusChange, ResourceAdded,
ResourceUpdated, ResourceRemoved), alerts, and anything of Warning or Critical severity.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import requests
import urllib3.exceptions

from fabric.drivers.base import DriverError
from fabric.drivers.events import STREAM_OPENED, DriverEvent, EventsNotOffered
from fabric.drivers.redfish.client import Session

logger = logging.getLogger(__name__)

STREAM_IDLE_S = 300.0  # a stream silent this long is taken for dead, and reopened
_RESOURCE_MESSAGES = (
    "ResourceStatusChanged",
    "ResourceStateChanged",
    "ResourceChanged",
    "ResourceAdded",
    "ResourceCreated",
    "ResourceRemoved",
    "ResourceErrors",
    "ResourceWarning",
)
_EVENT_TYPES = frozenset(
    {"Alert", "StatusChange", "ResourceAdded", "ResourceUpdated", "ResourceRemoved"}
)
_SEVERITIES = frozenset({"Warning", "Critical"})


def health_relevant(record: Mapping[str, Any]) -> bool:
    """Whether one event record may change what a health poll reads."""
    message = str(record.get("MessageId") or "")
    registry, name = message.split(".", 1)[0], message.rsplit(".", 1)[-1]
    if registry == "ResourceEvent" and name.startswith(_RESOURCE_MESSAGES):
        return True
    if str(record.get("EventType") or "") in _EVENT_TYPES:
        return True
    return str(record.get("MessageSeverity") or record.get("Severity") or "") in _SEVERITIES


def parse(event_id: str, data: str) -> list[DriverEvent]:
    """The events of one SSE message (an Event resource with its `Events` records)."""
    try:
        body = json.loads(data)
    except ValueError:
        logger.info("redfish event %s: not JSON, ignored", event_id or "(no id)")
        return []
    records = body.get("Events") if isinstance(body, dict) else None
    if not isinstance(records, list) or not records:
        records = [body] if isinstance(body, dict) else []
    found = []
    for record in records:
        if not isinstance(record, dict):
            continue
        origin = record.get("OriginOfCondition")
        found.append(
            DriverEvent(
                event_id=event_id,
                health_relevant=health_relevant(record),
                origin=str(origin.get("@odata.id") or "") if isinstance(origin, dict) else "",
                message_id=str(record.get("MessageId") or record.get("EventType") or ""),
            )
        )
    return found


class EventStream:
    """One open SSE stream of one service; `close()` from another thread ends it."""

    def __init__(self, session: Session, uri: str) -> None:
        self.session = session
        self.url = f"{session.endpoint}{uri}" if uri.startswith("/") else uri
        self._response: requests.Response | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _headers(self, client: Any, last_event_id: str) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        key = client.get_session_key()
        if key:
            headers["X-Auth-Token"] = key
        elif client.get_authorization_key():
            headers["Authorization"] = client.get_authorization_key()
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        return headers

    def _open(self, last_event_id: str) -> requests.Response:
        options = self.session.options
        client = self.session._signed_in()
        for attempt in (1, 2):
            try:
                response = requests.get(
                    self.url,
                    headers=self._headers(client, last_event_id),
                    stream=True,
                    timeout=(options.timeout_s, STREAM_IDLE_S),
                    verify=options.cafile() or False,
                )
            except requests.RequestException as exc:
                raise self.session._unreachable(exc, "open the event stream") from exc
            if response.status_code != 401:
                break
            response.close()
            if self.session._token or attempt == 2:
                raise DriverError(
                    f"{self.session.endpoint} refused the stored credentials of this manager "
                    "for its event stream (401).",
                    permanent=True,
                )
            logger.info("redfish %s: event stream refused (401), signing in again", self.url)
            client = self.session._sign_in_again(client)
        if response.status_code >= 400:
            response.close()
            raise DriverError(
                f"{self.session.endpoint} failed to open its event stream "
                f"({response.status_code}).",
                permanent=False,
            )
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "text/event-stream":
            # A login page or a JSON error answered 200: read as a stream, it would look
            # like a stream that closed at once, reopened for ever.
            response.close()
            raise DriverError(
                f"{self.session.endpoint} answered its event stream with Content-Type "
                f"{kind or '(none)'}, not text/event-stream.",
                permanent=False,
            )
        return response

    def events(self, last_event_id: str = "") -> Iterator[DriverEvent]:
        """Open the stream and yield STREAM_OPENED, then its events until the service or
        `close()` ends it. Raises DriverError (transient) when the connection fails
        mid-stream or stays silent for STREAM_IDLE_S."""
        response = self._open(last_event_id)
        with self._lock:
            if self._closed:
                response.close()
                return
            self._response = response
        event_id, data = "", list[str]()
        buffer = b""
        try:
            yield STREAM_OPENED
            while True:
                chunk = response.raw.read1(4096)
                if not chunk:
                    return
                buffer += chunk
                while b"\n" in buffer:
                    raw_line, buffer = buffer.split(b"\n", 1)
                    line = raw_line.rstrip(b"\r").decode("utf-8", "replace")
                    if line == "":
                        if data:
                            yield from parse(event_id, "\n".join(data))
                        data = []
                    elif line.startswith(":"):
                        continue  # a comment: the service's keep-alive
                    else:
                        name, _, value = line.partition(":")
                        value = value.removeprefix(" ")
                        if name == "id":
                            event_id = value
                        elif name == "data":
                            data.append(value)
        except (
            requests.RequestException,
            urllib3.exceptions.HTTPError,  # read1 raises urllib3's own, not requests'
            OSError,
            ValueError,
        ) as exc:
            if self._closed:
                return
            raise DriverError(_broke(self.session.endpoint, exc), permanent=False) from exc
        finally:
            response.close()

    def close(self) -> None:
        """End the stream (best effort; safe from another thread and more than once)."""
        with self._lock:
            self._closed = True
            response = self._response
        if response is not None:
            try:
                # Shut the socket down: a read blocked in another thread wakes only then
                # (closing alone waits for that read, i.e. the service's next byte), and
                # that thread closes the response itself (`events`, finally).
                connection = getattr(response.raw, "connection", None)
                sock = getattr(connection, "sock", None)
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
                else:
                    # A stream answered with `Connection: close` hands its socket to the
                    # response and the connection forgets it; reach it through the
                    # response's file descriptor (a duplicate shuts the same socket down).
                    with socket.socket(fileno=os.dup(response.raw.fileno())) as duplicate:
                        duplicate.shutdown(socket.SHUT_RDWR)
            except Exception as exc:  # no socket to reach: close, waiting for the read
                logger.debug("shutting the event stream down: %s", type(exc).__name__)
                try:
                    response.raw.close()
                except Exception as exc:  # a stream closing underneath must not fail the caller
                    logger.debug("closing the event stream: %s", type(exc).__name__)


def _broke(endpoint: str, exc: BaseException) -> str:
    """Why a stream ended mid-way, in an operator's words (the exception's text may hold
    the URL's query or a header, so only its type is named)."""
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError | TimeoutError):
        return (
            f"{endpoint}: its event stream sent nothing (not even a keep-alive) for "
            f"{STREAM_IDLE_S:.0f} s."
        )
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return f"{endpoint}: its event stream broke off mid-message ({type(exc).__name__})."
    return f"{endpoint}: the event stream broke ({type(exc).__name__})."


def _not_offered(session: Session, why: str) -> EventsNotOffered:
    return EventsNotOffered(
        f"{session.endpoint} offers no server-sent events ({why}): its health is polled on "
        "its interval only."
    )


def stream_of(session: Session) -> EventStream:
    """The service's event stream, found through its root's EventService link.

    Raises EventsNotOffered where the service has no EventService, or one without a
    ServerSentEventUri (or with the service disabled), or where either is not of the
    shape Redfish gives them: it is polled only (and asked again later)."""
    root = session.check(session.request("GET", "/redfish/v1/"), "read the service root").body
    entry = root.get("EventService") if isinstance(root, Mapping) else None
    if entry is not None and not isinstance(entry, Mapping):
        raise _not_offered(session, "its service root's EventService is not a link")
    link = (entry or {}).get("@odata.id")
    service: Mapping[str, Any] = {}
    if link:
        reply = session.request("GET", str(link))
        if reply.status != 404:  # a busy service is asked again; a gone one offers none
            service = session.check(reply, "read its EventService").body
    if not isinstance(service, Mapping):
        raise _not_offered(session, "its EventService is not an object")
    uri = service.get("ServerSentEventUri") or ""
    if not isinstance(uri, str):
        raise _not_offered(session, "EventService.ServerSentEventUri is not a string")
    if not uri or service.get("ServiceEnabled") is False:
        raise _not_offered(session, "no EventService.ServerSentEventUri, or disabled")
    return EventStream(session, uri)
