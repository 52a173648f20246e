"""The bulk maintenance form: which kind, which elements, in or out, and why.

Read by the confirmation (GET) and the change (POST) alike, so a bad value is the same
error naming its field in both; the elements it names are loaded here, in one query.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.http import url_has_allowed_host_and_scheme

from fabric.models import Device, Enclosure, Switch
from fabric.services.maintenance import BULK_MAX, REASON_MAX, MaintenanceTarget

BULK_KINDS: dict[str, tuple[type[Device | Switch | Enclosure], str, str]] = {
    # kind: (model, singular, plural)
    "device": (Device, "device", "devices"),
    "enclosure": (Enclosure, "enclosure", "enclosures"),
    "switch": (Switch, "switch", "switches"),
}


class BulkMaintenanceForm(forms.Form):
    """`kind`, `ids` (several), `on` (1: into maintenance, 0: back in service), `reason`,
    and `next`, the list to go back to (a path on this site only)."""

    kind = forms.ChoiceField(choices=[(k, v[2].capitalize()) for k, v in BULK_KINDS.items()])
    ids = forms.CharField(required=False, label="Elements")
    on = forms.TypedChoiceField(
        choices=[("1", "Into maintenance"), ("0", "Back in service")],
        coerce=lambda value: value == "1",
        label="Maintenance",
    )
    reason = forms.CharField(required=False, max_length=REASON_MAX, label="Reason")
    next = forms.CharField(required=False, max_length=2000)

    def __init__(self, data: Any, *, host: str, secure: bool) -> None:
        super().__init__(data)
        self._host = host
        self._secure = secure
        self.targets: list[MaintenanceTarget] = []

    def clean_ids(self) -> list[int]:
        raw = self.data.getlist("ids") if hasattr(self.data, "getlist") else self.data.get("ids")
        values = [v for part in (raw or []) for v in str(part).split(",") if v.strip()]
        ids: list[int] = []
        for value in values:
            if not value.strip().isdigit() or len(value.strip()) > 18:
                raise forms.ValidationError(f"“{value.strip()[:20]}” is not an element id.")
            if int(value) not in ids:
                ids.append(int(value))
        if not ids:
            raise forms.ValidationError("Tick at least one element.")
        if len(ids) > BULK_MAX:
            raise forms.ValidationError(f"At most {BULK_MAX} at once; got {len(ids)}.")
        return ids

    def clean_next(self) -> str:
        target = self.cleaned_data.get("next") or ""
        safe = url_has_allowed_host_and_scheme(
            target, allowed_hosts={self._host}, require_https=self._secure
        )
        return target if target and safe and target.startswith("/") else ""

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

    def error_list(self) -> list[str]:
        """The errors as lines naming their field in the operator's words."""
        return [
            f"{self[name].label if name in self.fields else name}: {message}"
            if name != "__all__"
            else str(message)
            for name, messages in self.errors.items()
            for message in messages
        ]
