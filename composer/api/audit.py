"""GET /api/v1/audit/: the audit page's entries, with the same filters, order and scoping.

The filters are the page's form (`composer.forms.audit.AuditFilterForm`), so a value means
the same in both and a bad one is a 400 naming its parameter; the rows come from
`composer.selectors.audit` (a UNION of keys paged in the database, then one query per trail).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from composer.forms.audit import AuditFilterForm
from composer.selectors.audit import KIND_LABELS, audit_entries, audit_index
from fabric.permissions import is_operator


class AuditChangeSerializer(serializers.Serializer):
    """One field of a change: its value before and after."""

    field = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


class AuditEntrySerializer(serializers.Serializer):
    """One audited change of state: who, what, when, from where, before and after."""

    # For the schema: the rows are `AuditEntry.as_dict()`.

    id = serializers.CharField(help_text='Unique across kinds, e.g. "state-81".')
    at = serializers.DateTimeField(help_text="When it happened.")
    kind = serializers.CharField(
        help_text="What it is about: " + ", ".join(sorted(KIND_LABELS)) + " (filter: `kind`)."
    )
    object_id = serializers.IntegerField(allow_null=True, help_text="That thing's id.")
    label = serializers.CharField(  # type: ignore[assignment]
        help_text="That thing's name when it changed."
    )
    action = serializers.CharField(help_text='What happened ("State changed", "Changed", ...).')
    changes = AuditChangeSerializer(many=True, help_text="Field by field, before and after.")
    message = serializers.CharField(allow_blank=True, help_text="Why, in words.")
    who = serializers.CharField(
        allow_blank=True, help_text="The user; empty for work nobody asked for."
    )
    source = serializers.CharField(  # type: ignore[assignment]
        allow_blank=True, help_text='Where from: "console", "api", "compose job 12", ...'
    )
    remote_addr = serializers.IPAddressField(
        allow_null=True, help_text="The caller's address (operators only; null for members)."
    )


def _text(max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


_PARAMETERS = [
    OpenApiParameter("who", _text(150), description="A username, exactly (any case)."),
    OpenApiParameter("kind", str, enum=sorted(KIND_LABELS), description="What it is about."),
    OpenApiParameter("label", _text(200), description="Part of the thing's name."),
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="At or after this time."),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="At or before this time."),
    OpenApiParameter(
        "source",
        _text(100),
        description="Part of where from (source; operators: also the address).",
    ),
]


@extend_schema(
    summary="The audit trail",
    description=(
        "Every change of state the caller may see, newest first: operators every change in "
        "the fabric and the console (field by field), compositions' state changes, jobs "
        "asked for and reconcile runs; tenant members their tenants' compositions' state "
        "changes, jobs and quota changes, without remote addresses. A filter value that is "
        "not valid (an unknown or, for a member, an operators' `kind`, a time that is not "
        "one, `until` before `since`, a value too long) answers 400 naming it."
    ),
    parameters=_PARAMETERS,
    examples=[
        OpenApiExample(
            "A composition became ready",
            response_only=True,
            status_codes=["200"],
            value={
                "id": "state-81",
                "at": "2026-11-30T09:15:02.118Z",
                "kind": "composition",
                "object_id": 17,
                "label": "train-7",
                "action": "State changed",
                "changes": [{"field": "state", "before": "binding", "after": "ready"}],
                "message": "Every device is bound and verified",
                "who": "alice",
                "source": "compose job 12",
                "remote_addr": None,
            },
        )
    ],
)
class AuditListView(ListAPIView):
    """GET /api/v1/audit/: the entries the caller may see that the filters select."""

    serializer_class = AuditEntrySerializer
    filter_backends: list[Any] = []  # the form filters, through the selector

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = AuditFilterForm(request.query_params, operator=is_operator(request.user))
        if not form.is_valid():
            raise ValidationError(
                {name: [str(m) for m in msgs] for name, msgs in form.errors.items()}
            )
        index = audit_index(user=request.user, filters=form.filters())
        # No trail can match: an empty page (count 0), paged like any other.
        keys: list[Any] | None = self.paginate_queryset(
            index if index is not None else []  # type: ignore[arg-type]
        )
        entries = audit_entries(keys or [], user=request.user)
        return self.get_paginated_response([entry.as_dict() for entry in entries])
