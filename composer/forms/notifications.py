"""The forms of the notification pages: routes, webhooks and silences.

They parse and draw; the services (`composer.notifications`) check and write, and their
errors come back next to the field they name (`errors_to_form`).
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from composer.models import Tenant, Webhook
from fabric.choices import AlertSeverity, AlertSource
from fabric.health.rules import RULES
from fabric.models import Alert

__all__ = [
    "DURATIONS",
    "OPERATORS",
    "RouteForm",
    "SilenceForm",
    "WebhookForm",
    "errors_to_form",
]

OPERATORS = "operators"  # the owner field's value for the operators' own
DURATIONS = [
    (1, "1 hour"),
    (2, "2 hours"),
    (4, "4 hours"),
    (8, "8 hours"),
    (12, "12 hours"),
    (24, "1 day"),
    (72, "3 days"),
    (168, "1 week"),
    (720, "30 days"),
]
_SELECT = {"class": "form-select"}
_INPUT = {"class": "form-control"}
_CHECK = {"class": "form-check-input"}
# Rules by their words, for choice lists.
RULE_CHOICES: list[tuple[str, str]] = sorted(RULES.items(), key=lambda item: item[1])


def errors_to_form(form: forms.Form, exc: ValidationError) -> None:
    """Put a service's ValidationError on the form: each message next to the field it
    names, or above the form when the form has no such field."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc)
        return
    for name, messages in exc.message_dict.items():
        form.add_error(name if name in form.fields else None, messages)


class OwnerForm(forms.Form):
    """A form whose row has an owner: the operators, or one of the tenants the user manages."""

    owner = forms.ChoiceField(label="Owner")

    def __init__(
        self, *args: Any, tenants: QuerySet[Tenant], operator: bool, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.operator = operator
        choices = [(OPERATORS, "Operators")] if operator else []
        self.tenants = {t.slug: t for t in tenants}
        choices += [(slug, tenant.name) for slug, tenant in self.tenants.items()]
        field = self.fields["owner"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices
        field.widget.attrs.update(_SELECT)
        if len(choices) == 1:
            field.initial = choices[0][0]

    def owner_tenant(self) -> Tenant | None:
        value = str(self.cleaned_data.get("owner") or "")
        return None if value in ("", OPERATORS) else self.tenants[value]


class WebhookForm(OwnerForm):
    name = forms.CharField(max_length=100, widget=forms.TextInput(attrs=_INPUT))
    url = forms.CharField(
        label="URL",
        max_length=500,
        widget=forms.URLInput(
            attrs={**_INPUT, "placeholder": "https://alerts.example.com/composer"}
        ),
        help_text="Alerts are posted here as JSON, signed (X-Composer-Signature).",
    )
    secret = forms.CharField(
        label="Signing secret",
        required=False,
        max_length=200,
        strip=False,
        widget=forms.PasswordInput(attrs={**_INPUT, "autocomplete": "new-password"}),
        help_text="Leave empty to have one made; it is shown once, then stored encrypted.",
    )
    is_enabled = forms.BooleanField(
        label="Enabled", required=False, initial=True, widget=forms.CheckboxInput(attrs=_CHECK)
    )

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            del self.fields["owner"]
            self.fields[
                "secret"
            ].help_text = "Leave empty to keep the stored secret; it is never shown again."


def _webhook_label(obj: Any) -> str:
    return f"{obj.name} ({obj.owner_label})"


def _lines(value: str) -> list[str]:
    return [part.strip() for part in re.split(r"[\s,;]+", value or "") if part.strip()]


class RouteForm(OwnerForm):
    name = forms.CharField(max_length=100, widget=forms.TextInput(attrs=_INPUT))
    min_severity = forms.ChoiceField(
        label="Severity at least",
        choices=AlertSeverity.choices,
        initial=AlertSeverity.WARNING,
        widget=forms.Select(attrs=_SELECT),
    )
    rules = forms.MultipleChoiceField(
        label="Rules",
        choices=RULE_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs=_CHECK),
        help_text="None ticked: every rule.",
    )
    source_types = forms.MultipleChoiceField(
        label="Kinds of element",
        choices=AlertSource.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs=_CHECK),
        help_text="None ticked: every kind.",
    )
    emails = forms.CharField(
        label="E-mail addresses",
        required=False,
        max_length=4000,
        widget=forms.Textarea(attrs={**_INPUT, "rows": 3, "placeholder": "oncall@example.com"}),
        help_text="One per line (or separated by commas).",
    )
    webhook = forms.ModelChoiceField(
        queryset=Webhook.objects.none(),
        required=False,
        empty_label="No webhook",
        widget=forms.Select(attrs=_SELECT),
        help_text="A webhook of the same owner.",
    )
    on_close = forms.BooleanField(
        label="Also when the alert closes",
        required=False,
        initial=True,
        widget=forms.CheckboxInput(attrs=_CHECK),
    )
    is_enabled = forms.BooleanField(
        label="Enabled", required=False, initial=True, widget=forms.CheckboxInput(attrs=_CHECK)
    )

    def __init__(
        self, *args: Any, webhooks: QuerySet[Webhook], editing: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["webhook"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = webhooks
        field.label_from_instance = _webhook_label  # type: ignore[method-assign]
        if editing:
            del self.fields["owner"]

    def clean_emails(self) -> list[str]:
        return _lines(self.cleaned_data.get("emails") or "")


class SilenceForm(OwnerForm):
    """What to silence (from an alert: its rule, its element, or both; otherwise a rule, and
    for operators an element by kind and id), for how long, and why."""

    MATCHES = [
        ("both", "This rule on this element"),
        ("rule", "This rule on every element"),
        ("element", "Every rule on this element"),
    ]

    alert = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=1)
    match = forms.ChoiceField(
        label="Silence",
        choices=MATCHES,
        initial="both",
        required=False,
        widget=forms.RadioSelect(attrs=_CHECK),
        help_text="Silenced alerts still show in the console; only e-mails and webhooks stop.",
    )
    rule = forms.ChoiceField(
        label="Rule",
        choices=[("", "Every rule"), *RULE_CHOICES],
        required=False,
        widget=forms.Select(attrs=_SELECT),
    )
    source_type = forms.ChoiceField(
        label="Kind of element",
        choices=[("", "—"), *AlertSource.choices],
        required=False,
        widget=forms.Select(attrs=_SELECT),
    )
    source_id = forms.IntegerField(
        label="Element id",
        required=False,
        min_value=1,
        max_value=2**63 - 1,
        widget=forms.NumberInput(attrs=_INPUT),
    )
    hours = forms.TypedChoiceField(
        label="For",
        choices=DURATIONS,
        coerce=int,
        initial=4,
        widget=forms.Select(attrs=_SELECT),
    )
    reason = forms.CharField(
        max_length=300,
        widget=forms.TextInput(attrs={**_INPUT, "placeholder": "Replacing the enclosure's fans"}),
    )

    def __init__(self, *args: Any, from_alert: Alert | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.from_alert = from_alert
        if from_alert is not None:
            for name in ("rule", "source_type", "source_id"):
                del self.fields[name]
            # The alert's own rule and element, in words the viewer may read.
            kind = from_alert.source_type.replace("_", " ")
            element = f"{kind} {from_alert.source_name}" if self.operator else f"this {kind}"
            rule = RULES.get(from_alert.rule, from_alert.rule)
            match = self.fields["match"]
            assert isinstance(match, forms.ChoiceField)
            match.choices = [
                ("both", f"{rule} on {element}"),
                ("rule", f"{rule} on every element"),
                ("element", f"Every rule on {element}"),
            ]
        else:
            del self.fields["match"]
            if not self.operator:
                # Tenants name an element by one of their alerts (from the alert list).
                del self.fields["source_type"]
                del self.fields["source_id"]
