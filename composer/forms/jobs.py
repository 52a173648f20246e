"""The filter form of the job list."""

from __future__ import annotations

from django import forms

from composer.choices import JobKind, JobStatus


class JobFilterForm(forms.Form):
    """Status and kind, each several at once; an unknown value is an error naming the field."""

    status = forms.MultipleChoiceField(choices=JobStatus.choices, required=False)
    kind = forms.MultipleChoiceField(choices=JobKind.choices, required=False)
