"""The filter form of the alert list.

The form checks and draws the filters; the API's `AlertFilterSet` applies them
(`AlertFilterForm.filter_query`), so a filter means the same on the page and in
/api/v1/alerts/.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from fabric.choices import AlertSeverity, AlertSource, AlertState

# "all" is the page's word for "no state filter"; the API has no such value.
STATE_ALL = "all"


class AlertFilterForm(forms.Form):
    """State (open, closed or all), severity and source type, the last two several at once,
    and free text (matched against what the viewer is shown: `AlertFilterSet.filter_text`);
    an unknown value is an error naming the field."""

    q = forms.CharField(required=False, max_length=100, label="Search")

    state = forms.ChoiceField(
        choices=[(STATE_ALL, "All"), *AlertState.choices], required=False, label="State"
    )
    severity = forms.MultipleChoiceField(
        choices=AlertSeverity.choices, required=False, label="Severity"
    )
    source_type = forms.MultipleChoiceField(
        choices=AlertSource.choices, required=False, label="Source"
    )

    def __init__(self, *args: Any, operator: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["state"].widget.attrs["class"] = "form-select form-select-sm"
        self.fields["q"].widget.attrs.update(
            {
                "class": "form-control form-control-sm",
                "placeholder": "Message or source" if operator else "Message",
                "type": "search",
                "autocomplete": "off",
            }
        )

    def filter_query(self) -> QueryDict:
        """The valid filters as the API's query string (`AlertFilterSet`'s parameters)."""
        query = QueryDict(mutable=True)
        state = self.cleaned_data.get("state") or STATE_ALL
        if state != STATE_ALL:
            query["state"] = state
        for name in ("severity", "source_type"):
            values = self.cleaned_data.get(name) or []
            if values:
                query.setlist(name, values)
        text = (self.cleaned_data.get("q") or "").strip()
        if text:
            query["q"] = text
        return query
