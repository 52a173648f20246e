"""GET /api/v1/events/: the live event stream for clients without websockets.

The same messages as `/ws/events/` (composer.events), read from the database: a client
polls with `?since=<the last id it has>` and gets what came after, oldest first, cut to
what it may see (operators everything; a tenant member its tenants' events, with other
tenants' parts removed by `payload_for`). Paged by id, not by page number: a page is
`limit` events after `since`, and `last_event_id` is the `since` of the next request
(also when nothing came).
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from composer.choices import EventType
from composer.events import Scope, event_message, events_for_scope, scope_for
from composer.models import Event
from fabric.filters import IdFilter

DEFAULT_LIMIT = 100
MAX_LIMIT = 500


@extend_schema_field(OpenApiTypes.INT)
class EventFilterSet(django_filters.FilterSet):
    """Events by type (several allowed), composition and job."""

    type = django_filters.MultipleChoiceFilter(choices=EventType.choices, distinct=False)
    composition = IdFilter(field_name="composition_id")
    job = IdFilter(field_name="job_id")

    class Meta:
        model = Event
        fields: list[str] = []


class EventMessageSerializer(serializers.Serializer):
    """One event, exactly as the websocket `/ws/events/` sends it."""

    # For the schema only: the rows are built by composer.events.event_message.

    type = serializers.CharField(help_text='Always "event".')
    id = serializers.IntegerField(help_text="The event's id: the cursor for `since`.")
    event_type = serializers.ChoiceField(choices=EventType.choices)
    at = serializers.DateTimeField()
    composition_id = serializers.IntegerField(allow_null=True)
    job_id = serializers.IntegerField(allow_null=True)
    payload = serializers.DictField(
        help_text="Ids and states; its shape depends on `event_type` (one object per type: "
        "`composition.state` has from, to and reason; `job.progress` status and percent; "
        "`fabric.alert` the alert and its blast radius). For a tenant member, other tenants' "
        "compositions and the list of affected tenants are removed."
    )


class EventCursorPagination(BasePagination):
    """`?since=<id>&limit=<1..500>`; the body is `{results, next, last_event_id}`."""

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: APIView | None = None
    ) -> list[Any]:
        self.request = request
        self.since = _int_param(request, "since", minimum=0, default=0)
        self.limit = _int_param(
            request, "limit", minimum=1, maximum=MAX_LIMIT, default=DEFAULT_LIMIT
        )
        rows = list(queryset.filter(pk__gt=self.since).order_by("id")[: self.limit + 1])
        self.has_more = len(rows) > self.limit
        rows = rows[: self.limit]
        self.last_event_id = rows[-1].pk if rows else self.since
        return rows

    def get_paginated_response(self, data: Any) -> Response:
        next_url = None
        if self.has_more:
            url = self.request.build_absolute_uri()
            next_url = replace_query_param(url, "since", self.last_event_id)
        return Response({"results": data, "next": next_url, "last_event_id": self.last_event_id})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["results", "next", "last_event_id"],
            "properties": {
                "results": schema,
                "next": {
                    "type": "string",
                    "format": "uri",
                    "nullable": True,
                    "description": "The next page when more events are waiting; else null.",
                    "example": None,
                },
                "last_event_id": {
                    "type": "integer",
                    "description": "Send it as `since` next time (`since` itself when empty).",
                    "example": 1042,
                },
            },
        }

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        return [
            {
                "name": "since",
                "in": "query",
                "required": False,
                "description": "Events after this id (the `last_event_id` you were given); 0.",
                "schema": {"type": "integer", "minimum": 0},
            },
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "description": f"Events per page (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
            },
        ]


def _int_param(
    request: Request, name: str, *, minimum: int, default: int, maximum: int | None = None
) -> int:
    """A whole-number query parameter within its bounds, or a 400 naming it."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return default
    # Length first: int() of thousands of digits is itself an error in Python 3.11+.
    if (
        not (raw.isascii() and raw.isdigit())
        or len(raw) > 19
        or int(raw) < minimum
        or (maximum is not None and int(raw) > maximum)
    ):
        bounds = f"from {minimum}" + (f" to {maximum}" if maximum is not None else "")
        raise ValidationError({name: [f"Expected a whole number {bounds}; got {raw[:40]!r}."]})
    return int(raw)


@extend_schema(
    summary="Events since an id (the live stream, polled)",
    description=(
        "The events of `/ws/events/`, for clients that poll: everything after `since`, "
        "oldest first, at most `limit` per page. Keep the `last_event_id` of each answer and "
        "send it as `since` next time; `next` is set while more are waiting. Operators see "
        "every event; tenant members their tenants' events, with other tenants' parts "
        "removed from the payload. Events can appear up to a few seconds late with an id "
        "below one you already have (transactions commit out of order): to miss none, "
        "re-read from an id some seconds old and de-duplicate by id. "
        "A `since` or `limit` that is not a whole number answers 400 naming it."
    ),
    examples=[
        OpenApiExample(
            "A composition became ready",
            response_only=True,
            status_codes=["200"],
            value={
                "type": "event",
                "id": 1042,
                "event_type": "composition.state",
                "at": "2026-11-30T09:15:02.118Z",
                "composition_id": 17,
                "job_id": None,
                "payload": {
                    "type": "composition.state",
                    "composition_id": 17,
                    "name": "train-7",
                    "tenant_id": 3,
                    "from": "binding",
                    "to": "ready",
                    "reason": "Every device is bound and verified",
                },
            },
        )
    ],
)
class EventListView(ListAPIView):
    """GET /api/v1/events/: events after `since` that the caller may see."""

    serializer_class = EventMessageSerializer
    filterset_class = EventFilterSet
    pagination_class = EventCursorPagination

    def get_queryset(self) -> QuerySet[Event]:
        self.heard: Scope = scope_for(self.request.user)
        return events_for_scope(self.heard)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rows = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert rows is not None  # always paginated
        messages = []
        for event in rows:
            payload = self.heard.payload(event)
            if payload is not None:
                messages.append(event_message(event, payload=payload))
        return self.get_paginated_response(messages)
