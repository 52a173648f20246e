"""The filters of the audit page, read by the page, its exports and GET /api/v1/audit/ alike,
so a filter means the same everywhere and a bad value is an error naming its field."""

from __future__ import annotations

from typing import Any

from django import forms
from django_filters.fields import IsoDateTimeField

from composer.selectors.audit import AuditFilters, audit_kinds


class AuditFilterForm(forms.Form):
    """Who, what (kind and label text), when (from, to) and from where; all optional.

    The kinds offered are those the viewer may see: a tenant member's are compositions,
    jobs and quotas, so asking for devices is an error rather than a silently empty page.
    """

    who = forms.CharField(
        required=False, max_length=150, label="Who", help_text="A username, exactly."
    )
    kind = forms.ChoiceField(required=False, label="What")
    label = forms.CharField(
        required=False, max_length=200, label="Name", help_text="Part of the name of the thing."
    )
    # ISO 8601 only (what the page's pickers send and the API documents), as the alerts' since.
    since = IsoDateTimeField(required=False, label="From")
    until = IsoDateTimeField(required=False, label="To")
    source = forms.CharField(
        required=False,
        max_length=100,
        label="From where",
        help_text="Part of the source (console, api, a job) or of the address.",
    )

    def __init__(self, *args: Any, operator: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kind = self.fields["kind"]
        assert isinstance(kind, forms.ChoiceField)
        kind.choices = [("", "Anything"), *audit_kinds(operator=operator)]
        kind.widget.attrs["class"] = "form-select form-select-sm"
        for name in ("since", "until"):
            self.fields[name].widget = forms.DateTimeInput(
                attrs={"type": "datetime-local", "class": "form-control form-control-sm"},
                format="%Y-%m-%dT%H:%M",
            )
        for name in ("who", "label", "source"):
            self.fields[name].widget.attrs["class"] = "form-control form-control-sm"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and until < since:
            self.add_error("until", "Must not be before From.")
        return data

    def filters(self) -> AuditFilters:
        """The valid filters (call after `is_valid()`)."""
        data = self.cleaned_data
        return AuditFilters(
            who=(data.get("who") or "").strip(),
            kind=data.get("kind") or "",
            text=(data.get("label") or "").strip(),
            since=data.get("since"),
            until=data.get("until"),
            source=(data.get("source") or "").strip(),
        )

    def error_list(self) -> list[str]:
        """Each error as "Field: message", for the banner above the table."""
        return [
            f"{self.fields[name].label or name.capitalize() if name in self.fields else 'Filters'}"
            f": {message}"
            for name, messages in self.errors.items()
            for message in messages
        ]
