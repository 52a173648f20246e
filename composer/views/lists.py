"""What composer's list pages (compositions, jobs, alerts, templates) share beyond the column
declarations of `fabric.views.listing`: their errors in the console's words and the filters
applied, in words, for the line that says why a table is empty.

Each page draws its filters with its own form and applies them with the FilterSet its API
endpoint uses; `ordering` is checked by that FilterSet (its values are the API's), so a bad
sort is an error naming it on the page as in the API.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from django import forms
from django.http import HttpRequest

from fabric.views.listing import export_error

__all__ = ["ORDERING", "filter_words", "form_errors", "list_problems", "ordering_of"]

ORDERING = "ordering"


def form_errors(form: forms.Form, *, only: Collection[str] | None = None) -> list[str]:
    """The form's errors, each naming its field by its label ("State: ..."); validates it.
    `only`: just those fields' errors (the others are another form's to report)."""
    errors: list[str] = []
    if form.is_valid():
        return errors
    for name, messages in form.errors.items():
        if only is not None and name not in only:
            continue
        field = form.fields.get(name)
        label = (field.label if field is not None else None) or name.replace("_", " ").capitalize()
        errors.extend(f"{label}: {message}" for message in messages)
    return errors


def list_problems(
    request: HttpRequest, form: forms.Form, filterset_form: forms.Form | None = None
) -> list[str]:
    """Everything wrong with a list page's query: the page form's fields, the sort (checked by
    the API's FilterSet, `filterset_form`), and a bad `export`."""
    errors = form_errors(form)
    if filterset_form is not None:
        errors += form_errors(filterset_form, only=(ORDERING,))
    bad_export = export_error(request)
    if bad_export:
        errors.append(bad_export)
    return errors


def ordering_of(request: HttpRequest) -> str:
    """The sort the URL asks for ("" for the page's default)."""
    return request.GET.get(ORDERING, "").strip()


def _words(field: forms.Field, value: Any) -> str:
    if isinstance(field, forms.ModelChoiceField):
        return str(value)  # the object's name; its choices would be a query
    if isinstance(value, bool):
        return "yes" if value else "no"
    choices = dict(getattr(field, "choices", ()) or ())
    if isinstance(value, list | tuple):
        return ", ".join(str(choices.get(v, v)) for v in value)
    if choices:
        return str(choices.get(value, value))
    return f"“{value}”"


def filter_words(form: forms.Form, *, unfiltered: Mapping[str, Any] | None = None) -> list[str]:
    """The valid filters applied, in words ("State: Ready", "Search: “train”"), for the line
    that says why a table is empty. `unfiltered`: values that mean "no filter" ({"state":
    "all"}). The sort is not a filter."""
    if not form.is_valid():
        return []
    ignore = dict(unfiltered or {})
    words = []
    for name, field in form.fields.items():
        value = form.cleaned_data.get(name)
        if name == ORDERING or value in (None, "", [], ()) or ignore.get(name) == value:
            continue
        label = field.label or name.replace("_", " ").capitalize()
        words.append(f"{label}: {_words(field, value)}")
    return words
