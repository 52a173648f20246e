"""GET /api/v1/search/: the search page's finds, grouped by kind, with the same scoping.

The parameters are the page's form (`composer.forms.search.ApiSearchForm`), so a bad one is a
400 naming it; the rows come from `composer.search`, one bounded query per kind.
To go past `limit` for one kind, use that resource's own list and its filters.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from composer.forms.search import ApiSearchForm
from composer.search import FINDERS, MAX_QUERY_LENGTH, search
from fabric.permissions import is_operator

DEFAULT_LIMIT = 5


class SearchHitSerializer(serializers.Serializer):
    """One thing found."""

    kind = serializers.CharField(help_text="What it is: " + ", ".join(FINDERS) + ".")
    id = serializers.IntegerField(help_text="Its id in its own API resource.")
    label = serializers.CharField(help_text="Its name (an alert: its message).")  # type: ignore[assignment]
    detail = serializers.CharField(allow_blank=True, help_text="A line about it, in words.")
    url = serializers.CharField(allow_null=True, help_text="Its page in the console.")


class SearchGroupSerializer(serializers.Serializer):
    """The first finds of one kind."""

    kind = serializers.CharField()
    title = serializers.CharField()
    more = serializers.BooleanField(help_text="True when more than `limit` of this kind match.")
    items = SearchHitSerializer(many=True)


class SearchResultSerializer(serializers.Serializer):
    query = serializers.CharField()
    results = SearchGroupSerializer(many=True, help_text="Kinds with at least one find.")


@extend_schema(
    summary="Search everything",
    description=(
        "Everything the caller may see whose name contains `q` (devices: also model and "
        "vendor; operators: also serial numbers and the manager's id; a member's alerts: "
        "the words the member is shown), or whose id is `q` (`17` or `#17`), "
        "grouped by kind, best matches first: an exact name or id, then names that start "
        "with `q`, then the rest by name. Operators search every kind; tenant members their "
        "compositions, jobs, tenants and the alerts that hurt them, and devices and pools "
        "(never serial numbers). A `kind` the caller may not search answers 400 naming it."
    ),
    parameters=[
        OpenApiParameter(
            "q",
            {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_LENGTH},
            required=True,
            description="What to look for.",
        ),
        OpenApiParameter("kind", str, enum=list(FINDERS), description="Only this kind."),
        OpenApiParameter(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": 100},
            description=f"How many of each kind (default {DEFAULT_LIMIT}).",
        ),
    ],
    responses=SearchResultSerializer,
    examples=[
        OpenApiExample(
            "A composition named like train",
            response_only=True,
            status_codes=["200"],
            value={
                "query": "train",
                "results": [
                    {
                        "kind": "composition",
                        "title": "Compositions",
                        "more": False,
                        "items": [
                            {
                                "kind": "composition",
                                "id": 17,
                                "label": "train-7",
                                "detail": "Acme AI · Ready",
                                "url": "/compositions/17/",
                            }
                        ],
                    }
                ],
            },
        )
    ],
)
class SearchView(APIView):
    """GET /api/v1/search/?q=: what matches, grouped by kind."""

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = ApiSearchForm(request.query_params, operator=is_operator(request.user))
        if not form.is_valid():
            raise ValidationError(
                {name: [str(m) for m in msgs] for name, msgs in form.errors.items()}
            )
        text, kind = form.cleaned_data["q"], form.cleaned_data["kind"]
        groups = search(
            user=request.user,
            text=text,
            per_kind=form.cleaned_data["limit"] or DEFAULT_LIMIT,
            kinds=[kind] if kind else None,
        )
        return Response(
            {
                "query": text,
                "results": [
                    {
                        "kind": group.finder.kind,
                        "title": group.finder.title,
                        "more": group.more,
                        "items": [hit.as_dict() for hit in group.hits],
                    }
                    for group in groups
                ],
            }
        )
