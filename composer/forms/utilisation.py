"""The utilisation page's choices (pool and period), read by the page, its CSV export and
GET /api/v1/utilisation/ alike, so a bad value is the same error naming its field in all."""

from __future__ import annotations

from typing import Any

from django import forms

from composer.selectors.utilisation import PERIOD_LABELS
from fabric.models import Pool


class UtilisationForm(forms.Form):
    """`pool`: a pool's slug, or blank for the whole data centre; `period`: day (default),
    week, month or year. Every signed-in user may see every pool's figures (the pools page),
    so naming a pool that does not exist is a plain field error."""

    pool = forms.CharField(required=False, max_length=100, label="Pool")
    period = forms.ChoiceField(
        required=False,
        choices=list(PERIOD_LABELS.items()),
        label="Period",
        error_messages={"invalid_choice": "Choose day, week, month or year."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["pool"].widget.attrs["class"] = "form-select"

    def clean_pool(self) -> Pool | None:
        slug = (self.cleaned_data.get("pool") or "").strip()
        if not slug:
            return None
        pool = Pool.objects.filter(slug=slug).first()
        if pool is None:
            raise forms.ValidationError("No pool has this slug.")
        return pool

    def clean_period(self) -> str:
        return self.cleaned_data.get("period") or "day"
