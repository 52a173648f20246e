"""The fault-injection form of the simulator page (operators, simulated managers only)."""

from __future__ import annotations

from typing import Any

from django import forms

from fabric.choices import FaultAction, FaultTarget
from fabric.models import FabricManager

# What the page remembers between injections (in its address, after the redirect).
REMEMBERED = ("manager", "target_type", "target", "action")


class FaultForm(forms.Form):
    """Which element of which simulated fabric, and what happens to it.

    `target` is what an operator knows: a name (a link by its two ends, as the console
    shows it: `cxl-spine-1 <-> mem-a-01`), an external id, or a console id. The service
    resolves it (`fabric.services.fault_targets`, as for the API) and names this field
    when nothing matches.
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
        widget=forms.TextInput(attrs={"placeholder": "e.g. cxl-spine-1"}),
    )
    action = forms.ChoiceField(choices=FaultAction.choices, initial=FaultAction.FAIL)

    @classmethod
    def remembered(cls, query: Any) -> dict[str, str]:
        """The initial values carried in the page's address after an injection, so the
        form keeps what the operator typed (only these fields, at most 200 characters)."""
        return {name: str(query.get(name))[:200] for name in REMEMBERED if query.get(name)}

    def target_kind(self) -> str:
        """The element kind the target field is for now (its suggestions follow it)."""
        value = self["target_type"].value()
        return str(value) if value in FaultTarget.values else FaultTarget.DEVICE
