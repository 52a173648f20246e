"""The resize form of a composition's page: devices to add (kind, model, count rows; a
share of a GPU; GiB of CXL memory) and the devices it holds, to tick for removal.

As the request form, it checks only what a form can; `composer.services.resize` checks the
rest, and its errors (each with `.field`: `add[1].count`, `remove[0]`) are put back on the
matching form field by `ResizeForm.add_composer_error`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from django import forms

from composer.errors import ComposerError
from composer.forms.compositions import KIND_CHOICES
from composer.models import Allocation
from composer.services.bindings import allocation_words
from fabric.kinds import all_kinds

__all__ = ["ADD_ROWS", "ResizeForm"]

ADD_ROWS = 2  # device rows the form offers; the API takes up to 16 entries
_ADD_FIELD = re.compile(r"^add\[(\d+)\](?:\.(\w+))?")
# The kinds the two amount fields add: a share of a kind that splits into shares (a GPU),
# GiB of a kind handed out in slices (CXL memory).
SHARE_KIND = next((k.name for k in all_kinds() if k.partition == "shares"), "")
SLICE_KIND = next((k.name for k in all_kinds() if k.sliced), "")


def _number(placeholder: str) -> forms.TextInput:
    """A text box for a whole number (as text, so that what was typed reaches the service,
    which says what is wrong with it; a number input would send letters as nothing)."""
    return forms.TextInput(
        attrs={
            "class": "form-control form-control-sm",
            "placeholder": placeholder,
            "inputmode": "numeric",
            "autocomplete": "off",
        }
    )


class ResizeForm(forms.Form):
    """What to add and what to give back; `allocations` are the devices the composition
    holds now (the choices to remove)."""

    gpu_share = forms.CharField(
        required=False,
        label="GPU share (thousandths)",
        help_text="Part of one more GPU, 1 to 999 thousandths.",
        widget=_number("none"),
    )
    memory_gib = forms.CharField(
        required=False, label="CXL memory to add (GiB)", widget=_number("0")
    )
    remove = forms.MultipleChoiceField(
        required=False,
        label="Remove",
        widget=forms.CheckboxSelectMultiple(attrs={"class": "form-check-input"}),
    )

    def __init__(self, *args: Any, allocations: Sequence[Allocation], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["remove"]).choices = [
            (str(a.pk), allocation_words(a)) for a in allocations
        ]
        for i in range(ADD_ROWS):
            self.fields[f"add_{i}_kind"] = forms.ChoiceField(
                required=False,
                choices=KIND_CHOICES,
                label="Kind",
                widget=forms.Select(attrs={"class": "form-select form-select-sm"}),
            )
            self.fields[f"add_{i}_model"] = forms.CharField(
                required=False,
                max_length=100,
                label="Model",
                widget=forms.TextInput(
                    attrs={
                        "class": "form-control form-control-sm",
                        "placeholder": "any model",
                        "list": "resize-models",
                    }
                ),
            )
            self.fields[f"add_{i}_count"] = forms.CharField(
                required=False, label="Count", widget=_number("1")
            )
        self.add_rows = [
            {part: self[f"add_{i}_{part}"] for part in ("kind", "model", "count")}
            for i in range(ADD_ROWS)
        ]
        self._field_of: list[str] = []  # entry of `add` -> the form field it came from

    def add(self) -> list[dict[str, Any]]:
        """The `add` list to send (raw text: the service says what is wrong with it)."""
        data = self.cleaned_data
        entries: list[dict[str, Any]] = []
        self._field_of = []
        for i in range(ADD_ROWS):
            kind = data.get(f"add_{i}_kind") or ""
            model = (data.get(f"add_{i}_model") or "").strip()
            count = (data.get(f"add_{i}_count") or "").strip()
            if not (kind or model or count):
                continue
            entry: dict[str, Any] = {"kind": kind, "count": count or 1}
            if model:
                entry["model"] = model
            entries.append(entry)
            self._field_of.append(f"add_{i}")
        share = (data.get("gpu_share") or "").strip()
        if share:
            entries.append({"kind": SHARE_KIND, "share": share})
            self._field_of.append("gpu_share")
        gib = (data.get("memory_gib") or "").strip()
        if gib:
            entries.append({"kind": SLICE_KIND, "gib": gib})
            self._field_of.append("memory_gib")
        return entries

    def remove_ids(self) -> list[str]:
        """The allocations ticked (their ids, as text)."""
        return list(self.cleaned_data.get("remove") or [])

    def field_for(self, field: str | None) -> str | None:
        """The form field that shows an error about the service's `field`, or None for an
        error about the resize as a whole."""
        if not field:
            return None
        if field.startswith("remove"):
            return "remove"
        match = _ADD_FIELD.match(field)
        if not match:
            return None
        index = int(match.group(1))
        source = self._field_of[index] if index < len(self._field_of) else ""
        if not source.startswith("add_"):
            return source or None
        part = match.group(2)
        return f"{source}_{part if part in ('kind', 'model', 'count') else 'kind'}"

    def add_composer_error(self, exc: ComposerError) -> None:
        """A service error beside the field it names (in its few words), or above the form
        (in its whole message)."""
        field = self.field_for(exc.field)
        self.add_error(field, exc.field_message if field else exc.message)

    def mark_invalid(self) -> None:
        """Bootstrap's red border on every field with an error."""
        for name in self.errors:
            if name in self.fields and name != "remove":
                widget = self.fields[name].widget
                classes = widget.attrs.get("class", "")
                if "is-invalid" not in classes:
                    widget.attrs["class"] = f"{classes} is-invalid".strip()
