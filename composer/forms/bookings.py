"""The booking form: a composition request's fields and a "When": the first window (local
date and time in a time zone) and its recurrence with an end date."""

from __future__ import annotations

from typing import Any

from django import forms

from composer.choices import Recurrence
from composer.forms.compositions import CompositionRequestForm

__all__ = ["WHEN_FIELDS", "BookingRequestForm"]

# The fields a booking adds; a service error naming one of them is shown beside it.
WHEN_FIELDS = ("starts_at", "ends_at", "time_zone", "recurrence", "until")

_LOCAL = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"]


class BookingRequestForm(CompositionRequestForm):
    """What to book (as a composition request: a template or the fields) and when. The
    window's times are wall-clock times in `time_zone`; `composer.services.bookings`
    checks them and says which field is wrong."""

    starts_at = forms.DateTimeField(
        required=False,
        label="Starts",
        help_text="Empty with a template that has a schedule: its next window.",
        input_formats=_LOCAL,
        error_messages={
            "required": "Say when the window starts.",
            "invalid": "Give a date and time.",
        },
        widget=forms.DateTimeInput(
            attrs={"class": "form-control", "type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
        ),
    )
    ends_at = forms.DateTimeField(
        required=False,
        label="Ends",
        input_formats=_LOCAL,
        error_messages={
            "required": "Say when the window ends.",
            "invalid": "Give a date and time.",
        },
        widget=forms.DateTimeInput(
            attrs={"class": "form-control", "type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
        ),
    )
    time_zone = forms.CharField(
        required=False,
        initial="UTC",
        max_length=64,
        label="Time zone",
        help_text="The windows keep these wall-clock times across daylight-saving changes.",
        widget=forms.TextInput(attrs={"class": "form-control", "placeholder": "Europe/Berlin"}),
    )
    recurrence = forms.ChoiceField(
        choices=[("", "As the template's schedule (else once)"), *Recurrence.choices],
        required=False,
        initial=Recurrence.NONE,
        label="Repeats",
        widget=forms.Select(attrs={"class": "form-select"}),
    )
    until = forms.DateField(
        required=False,
        label="Until (inclusive)",
        error_messages={"invalid": "Give a date."},
        widget=forms.DateInput(attrs={"class": "form-control", "type": "date"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].error_messages["required"] = "Give the booking a name."
        self.fields["name"].widget.attrs["placeholder"] = "e.g. nightly-inference"
        # Time is the tenant's own: the naive local times are read in the zone given.
        for name in ("starts_at", "ends_at"):
            self.fields[name].localize = False
        # A new booking's times are typed in the tenant's own zone: the page's script puts
        # the browser's there (UTC stays without script, or when a template names a zone).
        if not self.is_bound and "time_zone" not in self.initial:
            self.fields["time_zone"].widget.attrs["data-browser-zone"] = "true"

    def clean_starts_at(self) -> Any:
        return self._naive("starts_at")

    def clean_ends_at(self) -> Any:
        return self._naive("ends_at")

    def _naive(self, name: str) -> Any:
        """The wall-clock time typed, without the server's zone (the booking's applies)."""
        value = self.cleaned_data.get(name)
        return value.replace(tzinfo=None) if value is not None else None

    @property
    def when_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in WHEN_FIELDS]

    def field_for(self, spec_field: str | None) -> str | None:
        if spec_field in WHEN_FIELDS:
            return spec_field
        return super().field_for(spec_field)
