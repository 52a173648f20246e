"""The EventService: Composer's events as server-sent events, and no push subscriptions.

Events reach Redfish clients one way, the stream at `ServerSentEventUri` (composer/redfish/sse.py),
because a stream is a request the client makes over its own signed-in session, so nothing
needs to reach the client (no listening URL, no firewall opening, no stored destination
credentials) and what a tenant hears is exactly what its websocket would. `Subscriptions`
therefore exists, is empty and says so; creating one is refused (405).

`$filter` on the stream is not supported (every `SSEFilterPropertiesSupported` is false; the
Redfish Specification makes SSE filtering optional): a stream asked for with one is refused
(501, `Base.QueryParameterUnsupported`, as every resource here refuses `$filter`) rather
than sending events the client asked not to get.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from composer.events import scope_for
from composer.redfish.caller import Call
from composer.redfish.paths import EVENT_SERVICE, EVENT_STREAM, SUBSCRIPTIONS, row_id
from composer.redfish.routes import Route
from composer.redfish.sse import EventStream
from fabric.redfish_render.build import collection, health_status, ref, resource
from fabric.redfish_render.errors import refuse
from fabric.redfish_render.messages import registries

# (`EventType` is deprecated in the schema: not listed.)
SSE_FILTERS = (
    "EventFormatType",
    "MessageId",
    "MetricReportDefinition",
    "OriginResource",
    "RegistryPrefix",
    "ResourceType",
    "SubordinateResources",
)
SUBSCRIPTIONS_NOTE = (
    "Push subscriptions are not offered: events are delivered by the server-sent event "
    f"stream at {EVENT_STREAM} (EventService.ServerSentEventUri)."
)


def event_service(call: Call) -> dict[str, Any]:
    return resource(
        EVENT_SERVICE,
        "Event service",
        "EventService",
        Description="Composer's events (compositions, tasks, alerts, health) as server-sent "
        "events, each caller hearing what it may see.",
        ServiceEnabled=True,
        Status=health_status(),
        DeliveryRetryAttempts=0,
        DeliveryRetryIntervalSeconds=0,
        EventFormatTypes=["Event"],
        RegistryPrefixes=sorted(p for p in registries() if p != "Base"),
        ResourceTypes=["ComputerSystem", "ResourceBlock", "Task"],
        ServerSentEventUri=EVENT_STREAM,
        SSEFilterPropertiesSupported=dict.fromkeys(SSE_FILTERS, False),
        SubordinateResourcesSupported=False,
        IncludeOriginOfConditionSupported=False,
        ExcludeMessageId=False,
        ExcludeRegistryPrefix=False,
        Subscriptions=ref(SUBSCRIPTIONS),
    )


def subscriptions(call: Call) -> dict[str, Any]:
    body = collection(SUBSCRIPTIONS, "EventDestination", "Event subscriptions", [])
    body["Description"] = SUBSCRIPTIONS_NOTE
    return body


def event_stream(call: Call) -> HttpResponseBase:
    """GET the stream: from now on, or after the client's `Last-Event-ID`."""
    request = call.request
    if request is not None and request.method == "HEAD":
        return HttpResponse(content_type="text/event-stream")  # what a GET would start
    last = (request.headers.get("Last-Event-ID", "") if request is not None else "").strip()
    if last and row_id(last) is None:
        raise refuse(
            400,
            "Last-Event-ID must be the id of an event this stream sent (a whole number).",
            "Base.HeaderInvalid",
            f"Last-Event-ID: {last[:40]}",
        )
    heard = scope_for(call.caller.user)
    stream = EventStream(
        heard, after=row_id(last) if last else None, session_id=call.caller.session_id
    )
    if not connection.in_atomic_block:
        # The request's connection goes back now, not when the stream ends (hours later):
        # the stream takes one for each look at the database and gives it back at once.
        connection.close()
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy in front must not hold events back
    return response


ROUTES = [
    Route(EVENT_SERVICE, get=event_service),
    Route(SUBSCRIPTIONS, get=subscriptions),
    Route(EVENT_STREAM, get=event_stream),
]
