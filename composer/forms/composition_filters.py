"""The composition list's filters: state, tenant (operators only), template, a search."""

from __future__ import annotations

from typing import Any

from django import forms

from composer.choices import CompositionState
from composer.models import Template, Tenant


class CompositionFilterForm(forms.Form):
    """State, tenant (operators only), template and a search in the name."""

    state = forms.ChoiceField(
        choices=[("", "Any state"), *CompositionState.choices], required=False
    )
    tenant = forms.ModelChoiceField(
        queryset=Tenant.objects.order_by("name"),
        required=False,
        empty_label="Any tenant",
        to_field_name="slug",
    )
    template = forms.ModelChoiceField(
        queryset=Template.objects.order_by("name"),
        required=False,
        empty_label="Any template",
        to_field_name="slug",
    )
    q = forms.CharField(required=False, max_length=100, label="Search")

    def __init__(self, *args: Any, operator: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not operator:
            del self.fields["tenant"]
        for name in ("state", "tenant", "template"):
            if name in self.fields:
                self.fields[name].widget.attrs["class"] = "form-select form-select-sm"
        self.fields["q"].widget.attrs.update(
            {
                "class": "form-control form-control-sm",
                "placeholder": "Name",
                "type": "search",
                "autocomplete": "off",
            }
        )
