"""The fault-injection form of the simulator page (operators, simulated managers only)."""

from __future__ import annotations

from django import forms

from fabric.choices import FaultAction, FaultTarget
from fabric.forms import MAX_ID
from fabric.models import FabricManager


class FaultForm(forms.Form):
    """Which element of which simulated fabric, and what happens to it.

    `target` is what an operator knows: a name or an external id (a number is a console
    id). The service resolves it and names this field when nothing matches.
    """

    manager = forms.ModelChoiceField(
        queryset=FabricManager.objects.filter(driver="simulated").order_by("name"),
        empty_label=None,
        label="Fabric manager",
    )
    target_type = forms.ChoiceField(choices=FaultTarget.choices, label="Element")
    target = forms.CharField(
        max_length=200,
        label="Name or id",
        widget=forms.TextInput(attrs={"placeholder": "e.g. cxl-spine-1", "list": "fault-targets"}),
    )
    action = forms.ChoiceField(choices=FaultAction.choices, initial=FaultAction.FAIL)

    def clean_target(self) -> str:
        value = self.cleaned_data["target"].strip()
        if value.isascii() and value.isdigit() and (len(value) > 19 or int(value) > MAX_ID):
            raise forms.ValidationError("No element has an id that large.")
        return value

    def target_id(self) -> int | str:
        """The target as the service takes it: ASCII digits are a console id, the rest a
        name or an external id ("²" is a name, not a number)."""
        value = self.cleaned_data["target"]
        return int(value) if value.isascii() and value.isdigit() else value
