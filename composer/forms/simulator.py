"""The fault-injection form of the simulator page (operators, simulated managers only)."""

from __future__ import annotations

from django import forms

from fabric.choices import FaultAction, FaultTarget
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

    def target_id(self) -> int | str:
        """The target as the service takes it: digits are a console id, the rest a name."""
        value = self.cleaned_data["target"].strip()
        return int(value) if value.isdigit() else value
