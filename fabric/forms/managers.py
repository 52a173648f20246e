"""The fabric manager form of the add and edit pages.

It parses types only (a number, JSON, a checkbox); what makes a manager valid is checked by
`fabric.services.managers` (the API says the same words), whose ValidationError is put back
on the fields here. Credentials are write-only: their inputs start empty on every render,
even after an error, and an edit leaves the stored ones alone unless new ones are entered.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from fabric.drivers.registry import DRIVERS
from fabric.models import FabricManager
from fabric.secrets import mask_secrets
from fabric.services.managers import CredentialsInput, ManagerInput
from fabric.services.managers.input import TLS_KEYS

_TEXT = {"class": "form-control"}
_MONO = {"class": "form-control font-monospace"}


class WriteOnlyTextInput(forms.TextInput):
    """A text input that never renders a value: a username is part of the credentials,
    shown to nobody, not even re-filled after an error."""

    def format_value(self, value: Any) -> str | None:
        return None


def _checkbox(label: str, *, initial: bool = False) -> forms.BooleanField:
    return forms.BooleanField(
        required=False,
        initial=initial,
        label=label,
        widget=forms.CheckboxInput({"class": "form-check-input"}),
    )


def _masked_settings(values: dict[str, Any]) -> str:
    """The settings as the textarea shows them: no TLS keys (they have their own fields),
    secret-looking values masked at any depth (submitting the mask keeps the stored value)."""
    shown = mask_secrets(
        {key: value for key, value in sorted(values.items()) if key not in TLS_KEYS}
    )
    return json.dumps(shown, indent=2) if shown else "{}"


class ManagerForm(forms.Form):
    """Driver, name, endpoint, options, TLS, credentials, enabled and the poll interval."""

    name = forms.CharField(max_length=100, widget=forms.TextInput(_TEXT))
    driver = forms.ChoiceField(choices=(), widget=forms.Select({"class": "form-select"}))
    endpoint = forms.CharField(
        max_length=300,
        required=False,
        widget=forms.TextInput({**_MONO, "placeholder": "https://fabric-manager.example"}),
        help_text="Where the manager listens. No password here: use the credentials below.",
    )
    settings = forms.CharField(
        required=False,
        widget=forms.Textarea({**_MONO, "rows": 4}),
        help_text="The driver's options as a JSON object, {} for its defaults: e.g. "
        '{"timeout_s": 10, "composition_method": "specific"} for redfish, '
        '{"fabric": "demo"} for the simulated fabric.',
    )
    verify_tls = _checkbox("Verify the manager's TLS certificate", initial=True)
    ca_bundle = forms.CharField(
        max_length=500,
        required=False,
        label="CA bundle",
        widget=forms.TextInput({**_MONO, "placeholder": "/etc/ssl/certs/fabric-ca.pem"}),
        help_text="Full path of the CA certificates that sign the manager's certificate; "
        "blank for the system's.",
    )
    username = forms.CharField(
        required=False,
        widget=WriteOnlyTextInput({**_TEXT, "autocomplete": "off"}),
    )
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput({**_TEXT, "autocomplete": "new-password"}, render_value=False),
    )
    token = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput({**_TEXT, "autocomplete": "off"}, render_value=False),
        help_text="Instead of a username and password.",
    )
    clear_credentials = _checkbox("Remove the stored credentials")
    is_enabled = _checkbox("Enabled (synchronised and polled)", initial=True)
    health_poll_interval_s = forms.IntegerField(
        min_value=1,
        initial=30,
        label="Health poll interval (s)",
        widget=forms.NumberInput({**_TEXT, "min": 1}),
        error_messages={
            "invalid": "Enter the interval in whole seconds.",
            "min_value": "The interval must be at least 1 second.",
        },
    )

    def __init__(self, *args: Any, manager: FabricManager | None = None, **kwargs: Any) -> None:
        self.manager = manager
        if manager is not None and "initial" not in kwargs and not args:
            current = ManagerInput.of(manager)
            kwargs["initial"] = {
                "name": current.name,
                "driver": current.driver,
                "endpoint": current.endpoint,
                "settings": _masked_settings(dict(manager.settings or {})),
                "verify_tls": current.verify_tls,
                "ca_bundle": current.ca_bundle,
                "is_enabled": current.is_enabled,
                "health_poll_interval_s": current.health_poll_interval_s,
            }
        super().__init__(*args, **kwargs)
        names = sorted(DRIVERS)
        if manager is not None and manager.driver not in DRIVERS:
            names.append(manager.driver)  # shown as it is; saving asks for a registered one
        driver = self.fields["driver"]
        assert isinstance(driver, forms.ChoiceField)
        driver.choices = [(name, name) for name in names]
        if manager is None:
            del self.fields["clear_credentials"]

    def clean_settings(self) -> dict[str, Any]:
        text = (self.cleaned_data.get("settings") or "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"Settings are not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})."
            ) from None
        if not isinstance(value, dict):
            raise ValidationError('Settings must be a JSON object, e.g. {"fabric": "demo"}.')
        return value

    def manager_input(self) -> ManagerInput:
        """The parsed fields, for the service (call after `is_valid()`)."""
        data = self.cleaned_data
        return ManagerInput(
            name=data["name"],
            driver=data["driver"],
            endpoint=data.get("endpoint") or "",
            settings=data.get("settings") or {},
            verify_tls=bool(data.get("verify_tls")),
            ca_bundle=data.get("ca_bundle") or "",
            is_enabled=bool(data.get("is_enabled")),
            health_poll_interval_s=data["health_poll_interval_s"],
        )

    def credentials_input(self) -> CredentialsInput:
        data = self.cleaned_data
        return CredentialsInput(
            username=(data.get("username") or "").strip(),
            password=data.get("password") or "",
            token=data.get("token") or "",
            clear=bool(data.get("clear_credentials")),
        )

    def add_service_error(self, exc: ValidationError) -> None:
        """Put a service's ValidationError on the fields it names (others: the form's)."""
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        for name, messages in exc.message_dict.items():
            self.add_error(name if name in self.fields else None, messages)
