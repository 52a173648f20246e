"""The request form of the composition pages (the list's filters: `composition_filters`).

The request form checks only what a form can (choices, lengths); the spec itself is checked
by `composer.specs` and `composer.services.compositions`, whose errors (`SpecError`,
`QuotaExceeded`, each with `.field`) are put back on the matching form field by
`CompositionRequestForm.add_composer_error`. One source of truth for what a valid request is.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, cast

from django import forms
from django.db.models import QuerySet

import composer.placement.policies as policies
from composer.errors import ComposerError
from composer.models import Template, Tenant
from composer.specs import DEVICE_KINDS
from fabric.choices import ComponentState, DeviceKind
from fabric.models import Host

# Device item rows the form offers; the spec allows more (the API takes up to 16).
ITEM_ROWS = 3
_KIND_LABELS = dict(DeviceKind.choices)
KIND_CHOICES = [("", "—"), *((k, _KIND_LABELS.get(k, k)) for k in DEVICE_KINDS)]
# Spec fields that are form fields of the same name.
SCALAR_FIELDS = (
    "memory_gib",
    "storage_tb",
    "cores",
    "host_memory_gib",
    "host",
    "max_latency_ns",
    "policy",
    "same_switch",
    "critical",
    "self_heal",
    "name",
    "template",
)
_ITEM_FIELD = re.compile(r"^items\[(\d+)\](?:\.(kind|model|count|minima|share)(?:\.(\w+))?)?$")
SHARE_ROW = -1  # the spec item the GPU share field makes, in `_item_row_of`


def _number_input(placeholder: str = "", *, whole: bool = True) -> forms.TextInput:
    """A text box for a number, not `<input type=number>`: a browser sends an empty value for
    letters typed into a number input, which would read as "not given" (a count of 1, no
    memory). As text, what was typed reaches `spec_normalise`, which says what is wrong."""
    return forms.TextInput(
        attrs={
            "class": "form-control form-control-sm",
            "placeholder": placeholder,
            "inputmode": "numeric" if whole else "decimal",
            "autocomplete": "off",
        }
    )


def _named(text: str) -> list[dict[str, Any]]:
    """The named devices typed as "gpu-03, cxl-01:256": a name each, with GiB after a colon
    (raw text: `spec_normalise` says what is wrong with it)."""
    named = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        device, _, gib = part.partition(":")
        named.append({"device": device.strip(), "gib": gib.strip() or None})
    return named


class CompositionRequestForm(forms.Form):
    """A composition request: a template as is, or a custom spec.

    Numbers are taken as text and checked by `spec_normalise`, and the name by
    `composition_request` (no `maxlength`: a browser would cut a long name without a word),
    so the form and the API give the same messages. With a template, the template's spec is
    used as is, except for self-heal, which the tenant may turn on or off on top of it.
    `tenants` are those the user may request for (one: no choice shown); `operator` adds the
    host choice (hosts are fabric objects, for operators only).
    """

    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), empty_label=None)
    name = forms.CharField(
        error_messages={"required": "Give the composition a name."},
        widget=forms.TextInput(
            attrs={"class": "form-control", "placeholder": "e.g. inference-1", "autofocus": True}
        ),
    )
    template = forms.ModelChoiceField(
        queryset=Template.objects.filter(is_active=True).order_by("name"),
        required=False,
        empty_label="Custom request",
        widget=forms.Select(attrs={"class": "form-select"}),
    )
    memory_gib = forms.CharField(
        required=False, label="CXL memory (GiB)", widget=_number_input("0")
    )
    storage_tb = forms.CharField(
        required=False, label="NVMe storage (TB)", widget=_number_input("0", whole=False)
    )
    gpu_share = forms.CharField(
        required=False,
        label="GPU share (thousandths)",
        help_text="Part of one GPU, 1 to 999 thousandths, shared with others on its host.",
        widget=_number_input("none"),
    )
    cores = forms.CharField(required=False, label="Host cores", widget=_number_input("0"))
    host_memory_gib = forms.CharField(
        required=False, label="Host memory (GiB)", widget=_number_input("0")
    )
    host = forms.ChoiceField(
        required=False,
        choices=[("", "Any host")],
        widget=forms.Select(attrs={"class": "form-select form-select-sm"}),
    )
    max_latency_ns = forms.CharField(
        required=False, label="Latency ceiling (ns)", widget=_number_input("no ceiling")
    )
    policy = forms.ChoiceField(
        choices=policies.choices,  # read when a form is made: registered policies included
        initial="none",
        required=False,
        label="Failure-domain policy",
        widget=forms.Select(attrs={"class": "form-select form-select-sm"}),
    )
    same_switch = forms.BooleanField(
        required=False,
        label=policies.SAME_SWITCH.label,
        widget=forms.CheckboxInput(attrs={"class": "form-check-input"}),
    )
    critical = forms.BooleanField(
        required=False,
        label=policies.CRITICAL.label,
        widget=forms.CheckboxInput(attrs={"class": "form-check-input"}),
    )
    self_heal = forms.BooleanField(
        required=False,
        label="Self-heal: replace failed devices automatically",
        widget=forms.CheckboxInput(attrs={"class": "form-check-input"}),
    )
    devices = forms.CharField(
        required=False,
        label="Named devices",
        help_text="These devices exactly, comma-separated; name:GiB for a CXL memory slice.",
        widget=forms.TextInput(
            attrs={"class": "form-control form-control-sm", "placeholder": "gpu-03, cxl-01:256"}
        ),
    )
    idempotency_key = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)

    def __init__(
        self, *args: Any, tenants: QuerySet[Tenant], operator: bool = False, **kwargs: Any
    ) -> None:
        kwargs.setdefault("initial", {}).setdefault("idempotency_key", uuid.uuid4().hex)
        super().__init__(*args, **kwargs)
        cast("forms.ModelChoiceField[Tenant]", self.fields["tenant"]).queryset = tenants
        self.fields["tenant"].widget.attrs["class"] = "form-select"
        self.single_tenant = tenants.count() == 1
        self._only_tenant = tenants.first() if self.single_tenant else None
        if self.single_tenant:
            self.fields["tenant"].initial = self._only_tenant
            self.fields["tenant"].required = False
            self.fields["tenant"].widget = forms.HiddenInput()
        else:
            # Picking another tenant redraws the quota panel beside the form: the panel
            # listens for the change and reads this field itself (_quota_panel.html).
            self.fields["tenant"].widget.attrs["aria-controls"] = "quota-panel"
        if operator:
            hosts = list(
                Host.objects.exclude(state=ComponentState.ABSENT)
                .order_by("name", "manager__name")
                .values_list("pk", "name", "manager__name")
            )
            # Two managers' worlds may both have a "host-a-01": name the manager then.
            several = len({manager for _pk, _name, manager in hosts}) > 1
            cast(forms.ChoiceField, self.fields["host"]).choices = [
                ("", "Any host"),
                *(
                    (str(pk), f"{name} ({manager})" if several else name)
                    for pk, name, manager in hosts
                ),
            ]
        else:
            del self.fields["host"]
        self.item_rows: list[dict[str, forms.BoundField]] = []
        for i in range(ITEM_ROWS):
            self.fields[f"item_{i}_kind"] = forms.ChoiceField(
                required=False,
                choices=KIND_CHOICES,
                label="Kind",
                widget=forms.Select(attrs={"class": "form-select form-select-sm"}),
            )
            self.fields[f"item_{i}_model"] = forms.CharField(
                required=False,
                max_length=100,
                label="Model",
                widget=forms.TextInput(
                    attrs={
                        "class": "form-control form-control-sm",
                        "placeholder": "any model",
                        "list": "device-models",
                    }
                ),
            )
            self.fields[f"item_{i}_count"] = forms.CharField(
                required=False, label="Count", widget=_number_input("1")
            )
            self.fields[f"item_{i}_min_memory_gib"] = forms.CharField(
                required=False, label="Min. memory (GiB)", widget=_number_input("any", whole=False)
            )
        self.item_rows = [
            {
                part: self[f"item_{i}_{part}"]
                for part in ("kind", "model", "count", "min_memory_gib")
            }
            for i in range(ITEM_ROWS)
        ]
        self._item_row_of: list[int] = []  # spec item index -> form row

    def clean_tenant(self) -> Tenant | None:
        """With one tenant to choose from, that tenant (the field is hidden)."""
        tenant = self.cleaned_data.get("tenant")
        if tenant is None and self._only_tenant is not None:
            return self._only_tenant
        if tenant is None:
            raise forms.ValidationError("Choose the tenant to request for.")
        return tenant

    def shown_tenant(self) -> Tenant | None:
        """The tenant the tenant field shows selected: the one sent when it is one offered,
        else the only or the first one offered (a select without a blank shows its first)."""
        if self._only_tenant is not None:
            return self._only_tenant
        tenants = cast("forms.ModelChoiceField[Tenant]", self.fields["tenant"]).queryset
        assert tenants is not None  # set in __init__
        sent = str(self["tenant"].value() or "")
        chosen = tenants.filter(pk=int(sent)).first() if sent.isascii() and sent.isdigit() else None
        return chosen or tenants.first()

    # --- the spec -------------------------------------------------------------------------

    def spec(self) -> dict[str, Any]:
        """The spec to send: with a template, only self-heal (which overrides the template's
        own; the rest of its spec is used as is), else the fields.

        Raw text goes through: `spec_normalise` says what is wrong with it.
        """
        data = self.cleaned_data
        self._item_row_of = []
        if data.get("template") is not None:
            return {"self_heal": bool(data.get("self_heal"))}
        items = []
        for i in range(ITEM_ROWS):
            kind = data.get(f"item_{i}_kind") or ""
            model = (data.get(f"item_{i}_model") or "").strip()
            count = (data.get(f"item_{i}_count") or "").strip()
            minimum = (data.get(f"item_{i}_min_memory_gib") or "").strip()
            if not (kind or model or count or minimum):
                continue
            item: dict[str, Any] = {"kind": kind, "count": count or 1}
            if model:
                item["model"] = model
            if minimum:
                item["minima"] = {"memory_gib": minimum}
            items.append(item)
            self._item_row_of.append(i)
        share = (data.get("gpu_share") or "").strip()
        if share:  # a share of one GPU is an item of its own (composer.specs)
            items.append({"kind": "gpu", "share": share})
            self._item_row_of.append(SHARE_ROW)
        spec: dict[str, Any] = {"items": items, "devices": _named(data.get("devices") or "")}
        for name in ("memory_gib", "storage_tb", "cores", "host_memory_gib", "max_latency_ns"):
            spec[name] = (data.get(name) or "").strip() or None
        spec["host"] = data.get("host") or None
        spec["policy"] = data.get("policy") or "none"
        spec["same_switch"] = bool(data.get("same_switch"))
        spec["critical"] = bool(data.get("critical"))
        spec["self_heal"] = bool(data.get("self_heal"))
        return spec

    def preview_spec(self) -> dict[str, Any]:
        """What a preview places: the template's spec, or the custom fields."""
        template = self.cleaned_data.get("template")
        return {**(template.spec if template else {}), **self.spec()}

    def field_for(self, spec_field: str | None) -> str | None:
        """The form field that shows an error about `spec_field` ("items[1].count"), or
        None for an error about the whole request."""
        if not spec_field:
            return None
        if spec_field in SCALAR_FIELDS and spec_field in self.fields:
            if self.cleaned_data.get("template") is not None and spec_field not in (
                "name",
                "template",
                "self_heal",
            ):
                return "template"  # the template's own spec is at fault
            return spec_field
        match = _ITEM_FIELD.match(spec_field)
        if match:
            if self.cleaned_data.get("template") is not None:
                return "template"
            index = int(match.group(1))
            row = self._item_row_of[index] if index < len(self._item_row_of) else 0
            if row == SHARE_ROW:
                return "gpu_share"
            part = match.group(2)
            if part == "minima":
                return f"item_{row}_min_memory_gib"
            return f"item_{row}_{part or 'kind'}"
        if spec_field.startswith("devices"):
            return "template" if self.cleaned_data.get("template") is not None else "devices"
        if spec_field == "items":
            return "template" if self.cleaned_data.get("template") is not None else "item_0_kind"
        return None

    def add_composer_error(self, exc: ComposerError) -> None:
        """Put a service error on the field it names, in the few words that suit a message
        beside that field; elsewhere (the template, the form as a whole) the whole message,
        which says which part is wrong."""
        field = self.field_for(exc.field)
        own = (field is not None and field != "template") or exc.field == "template"
        self.add_error(field, exc.field_message if own else exc.message)

    @property
    def amount_fields(self) -> list[forms.BoundField]:
        names = (
            "gpu_share",
            "memory_gib",
            "storage_tb",
            "cores",
            "host_memory_gib",
            "max_latency_ns",
        )
        return [self[name] for name in names]

    @property
    def locked_flag_fields(self) -> list[forms.BoundField]:
        """The flags a template sets for good (self-heal stays the tenant's choice)."""
        return [self["same_switch"], self["critical"]]

    def mark_invalid(self) -> None:
        """Bootstrap's red border on every field with an error."""
        for name in self.errors:
            if name in self.fields:
                widget = self.fields[name].widget
                classes = widget.attrs.get("class", "")
                if "is-invalid" not in classes:
                    widget.attrs["class"] = f"{classes} is-invalid".strip()

    def template_specs(self) -> dict[str, Any]:
        """Active templates' specs by id, for the page script that fills the locked fields."""
        queryset = cast("forms.ModelChoiceField[Template]", self.fields["template"]).queryset
        assert queryset is not None  # the field is declared with one
        return {str(t.pk): {"spec": t.spec, "description": t.description} for t in queryset}
