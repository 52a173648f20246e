"""The bulk maintenance form: which kind, which elements, in or out, and why.

Read by the confirmation (GET) and the change (POST) alike, so a bad value is the same
error naming its field in both; the elements it names are loaded here, in one query.
"""

from __future__ import annotations

from typing import Any

from django import forms

from fabric.forms.bulk import BulkForm
from fabric.models import Device, Enclosure, Switch
from fabric.services.maintenance import BULK_MAX, REASON_MAX, MaintenanceTarget

BULK_KINDS: dict[str, tuple[type[Device | Switch | Enclosure], str, str]] = {
    # kind: (model, singular, plural)
    "device": (Device, "device", "devices"),
    "enclosure": (Enclosure, "enclosure", "enclosures"),
    "switch": (Switch, "switch", "switches"),
}


class BulkMaintenanceForm(BulkForm):
    """`kind`, `ids` (several), `on` (1: into maintenance, 0: back in service), `reason`,
    and `next` (`BulkForm`)."""

    limit = BULK_MAX

    kind = forms.ChoiceField(choices=[(k, v[2].capitalize()) for k, v in BULK_KINDS.items()])
    on = forms.TypedChoiceField(
        choices=[("1", "Into maintenance"), ("0", "Back in service")],
        coerce=lambda value: value == "1",
        label="Maintenance",
    )
    reason = forms.CharField(required=False, max_length=REASON_MAX, label="Reason")

    def __init__(self, data: Any, *, host: str, secure: bool) -> None:
        super().__init__(data, host=host, secure=secure)
        self.targets: list[MaintenanceTarget] = []

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind, ids = data.get("kind"), data.get("ids")
        if kind and ids:
            model = BULK_KINDS[kind][0]
            found = {t.pk: t for t in model.objects.select_related("manager").filter(pk__in=ids)}
            missing = [str(pk) for pk in ids if pk not in found]
            if missing:
                noun = BULK_KINDS[kind][1] if len(missing) == 1 else BULK_KINDS[kind][2]
                self.add_error("ids", f"No {noun} with id {', '.join(missing)}.")
            else:
                self.targets = [found[pk] for pk in ids]
        return data
