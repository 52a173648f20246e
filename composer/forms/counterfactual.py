"""The counterfactual's question: a period and the server shapes to replay it onto. Read by
the page and GET /api/v1/counterfactual/ alike, so a bad value is the same error naming its
field in both."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.utils import timezone

from composer.models import ServerShape

DEFAULT_DAYS = 7
MAX_DAYS = 366


class CounterfactualForm(forms.Form):
    """`start` and `end` (default: the last seven days up to now) and `shape`, one or more
    catalogue ids (default: every shape in the catalogue)."""

    start = forms.DateTimeField(required=False, label="From")
    end = forms.DateTimeField(required=False, label="To")
    shape = forms.ModelMultipleChoiceField(
        queryset=ServerShape.objects.all(),
        required=False,
        label="Server shapes",
        error_messages={
            "invalid_choice": "No server shape with id %(value)s.",
            "invalid_pk_value": "“%(pk)s” is not a server shape id.",
        },
    )

    def __init__(self, *args: Any, now: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.now = now or timezone.now()
        for name in ("start", "end"):
            self.fields[name].widget = forms.DateTimeInput(
                attrs={"type": "datetime-local", "class": "form-control"},
                format="%Y-%m-%dT%H:%M",
            )
        self.fields["shape"].widget.attrs.update({"class": "form-select", "size": 6})

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        end = data.get("end") or self.now
        start = data.get("start") or end - timedelta(days=DEFAULT_DAYS)
        if "start" in self.errors or "end" in self.errors:
            return data
        if end <= start:
            self.add_error("end", "To must be after From.")
        elif end - start > timedelta(days=MAX_DAYS):
            self.add_error("end", f"The period may be at most {MAX_DAYS} days.")
        data["start"], data["end"] = start, end
        if "shape" not in self.errors and not data.get("shape"):
            shapes = list(ServerShape.objects.all())
            if not shapes:
                self.add_error(
                    "shape",
                    "The catalogue has no server shapes: add one in the admin or run "
                    "manage.py seed_server_shapes.",
                )
            data["shape"] = shapes
        return data
