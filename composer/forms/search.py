"""The search box's fields, read by the search page and GET /api/v1/search/ alike, so that a
bad value is the same error naming its field in both."""

from __future__ import annotations

from typing import Any

from django import forms

from composer.search import MAX_QUERY_LENGTH, search_kinds


class SearchForm(forms.Form):
    """What to look for (`q`) and, optionally, one kind to page through (`kind`).

    The kinds offered are the viewer's: a tenant member asking for hosts gets an error that
    names the field, not an empty page that would hint the kind exists but is hidden.
    """

    q = forms.CharField(
        max_length=MAX_QUERY_LENGTH,
        label="Search",
        error_messages={"required": "Type something to search for."},
    )
    kind = forms.ChoiceField(required=False, label="Kind")

    def __init__(self, *args: Any, operator: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kind = self.fields["kind"]
        assert isinstance(kind, forms.ChoiceField)
        kind.choices = [("", "Everything")] + [
            (f.kind, f.title) for f in search_kinds(operator=operator)
        ]
        self.fields["q"].widget.attrs.update(
            {
                "class": "form-control",
                "type": "search",
                "autocomplete": "off",
                "placeholder": "Name, serial, model, id…" if operator else "Name, model, id…",
            }
        )
        kind.widget.attrs["class"] = "form-select"


class ApiSearchForm(SearchForm):
    """The API's search: as the page's, and how many of each kind to answer (`limit`)."""

    limit = forms.IntegerField(required=False, min_value=1, max_value=100, label="limit")
