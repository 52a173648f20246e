"""What an operator may enter for a fabric manager, checked once for the pages and the API.

The page's form and the API's serializer only parse types; every rule about a manager's
fields lives here (and in `FabricManager.clean`), so both surfaces refuse the same input in
the same words, each naming its field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

from fabric.credentials import BadCredentialsKey, NoCredentialsKey, encrypt
from fabric.models import FabricManager
from fabric.secrets import MASK, is_secret_key
from fabric.validators import check_text_fields, text_problem

# Settings keys that have fields of their own (the TLS options).
TLS_KEYS = ("verify_tls", "ca_bundle")
CREDENTIAL_MAX_LENGTH = 4096
ENDPOINT_SCHEMES = ("http", "https", "sim")


@dataclass(frozen=True)
class ManagerInput:
    """Every field of a manager an operator sets, as parsed by a form or a serializer.

    `settings` holds the driver's options other than the TLS ones, which are
    `verify_tls` and `ca_bundle` here and stored under those keys in `settings`.
    """

    name: str
    driver: str
    endpoint: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    verify_tls: bool = True
    ca_bundle: str = ""
    is_enabled: bool = True
    health_poll_interval_s: int = 30

    @classmethod
    def of(cls, manager: FabricManager) -> ManagerInput:
        """What `manager` holds now, in this shape (the starting point of an edit)."""
        stored = dict(manager.settings or {})
        return cls(
            name=manager.name,
            driver=manager.driver,
            endpoint=manager.endpoint,
            settings={k: v for k, v in stored.items() if k not in TLS_KEYS},
            verify_tls=stored.get("verify_tls") is not False,
            ca_bundle=str(stored.get("ca_bundle") or ""),
            is_enabled=manager.is_enabled,
            health_poll_interval_s=manager.health_poll_interval_s,
        )


@dataclass(frozen=True)
class CredentialsInput:
    """Credentials as entered: a username and password, or a token; all blank keeps what is
    stored, `clear` removes it. Never logged, never echoed back."""

    username: str = ""
    password: str = ""
    token: str = ""
    clear: bool = False

    def __repr__(self) -> str:  # a traceback or a debug log must not show them
        return f"CredentialsInput(given={self.is_given()}, clear={self.clear})"

    def is_given(self) -> bool:
        return bool(self.username or self.password or self.token)


def credentials_check(entered: CredentialsInput) -> dict[str, str] | None:
    """The credentials to store ({} to remove them), or None to keep what is stored.

    Raises ValidationError naming `username`, `password`, `token` or `clear_credentials`.
    """
    if entered.clear:
        if entered.is_given():
            raise ValidationError(
                {
                    "clear_credentials": "Either remove the stored credentials or enter new "
                    "ones, not both."
                }
            )
        return {}
    if not entered.is_given():
        return None
    errors: dict[str, str] = {}
    for name in ("username", "password", "token"):
        if len(getattr(entered, name)) > CREDENTIAL_MAX_LENGTH:
            errors[name] = f"At most {CREDENTIAL_MAX_LENGTH} characters."
    if entered.token and (entered.username or entered.password):
        errors["token"] = "Give either a token or a username and password, not both."
    elif entered.username and not entered.password:
        errors["password"] = "Enter the password for this username."
    elif entered.password and not entered.username:
        errors["username"] = "Enter the username this password belongs to."
    if errors:
        raise ValidationError(errors)
    if entered.token:
        return {"token": entered.token}
    return {"username": entered.username, "password": entered.password}


def credentials_ciphertext(values: Mapping[str, str], *, field_name: str) -> str:
    """The ciphertext to store for `values` ("" for none); raises ValidationError naming
    `field_name` when no usable key is configured, so nothing is stored in clear."""
    if not values:
        return ""
    try:
        return encrypt(values)
    except (NoCredentialsKey, BadCredentialsKey) as exc:
        raise ValidationError(
            {field_name: f"Credentials cannot be saved: {exc}. Nothing was saved."}
        ) from None


def endpoint_check(endpoint: str) -> str:
    """The endpoint, stripped; raises ValidationError naming `endpoint`.

    A password inside the URL is refused: it would be stored and shown in clear, while the
    credentials fields keep it encrypted.
    """
    endpoint = endpoint.strip()
    if not endpoint:
        return ""
    try:
        parts = urlsplit(endpoint)
        has_password = parts.password is not None
        port = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        raise ValidationError(
            {"endpoint": "The endpoint is not a valid address (check the port)."}
        ) from None
    if parts.scheme not in ENDPOINT_SCHEMES or not parts.netloc:
        raise ValidationError(
            {
                "endpoint": "Enter the manager's address with its scheme, e.g. "
                "https://fabric-manager.example:443."
            }
        )
    if has_password or parts.username:
        raise ValidationError(
            {
                "endpoint": "Put the username and password in the credentials fields, not in "
                "the endpoint: they are stored encrypted there."
            }
        )
    del port
    return endpoint


_ABSENT = object()  # no stored value at this place in the settings


def _no_secret(key: str, value: Any, stored: Any, *, path: str) -> Any:
    """`value` to store under `key`, walked to any depth: a secret-looking key may only
    keep its stored value (the page shows it as the mask), so `{"auth": {"password": ...}}`
    is refused like a top-level one, naming where it is ("auth.password")."""
    if is_secret_key(key) and value not in (None, ""):
        if value == MASK and stored is not _ABSENT:
            return stored  # the page showed it masked: keep what is stored
        raise ValidationError(
            {
                "settings": f"Setting {path!r} looks like a secret: enter secrets in "
                "the credentials fields, which are stored encrypted."
            }
        )
    if isinstance(value, Mapping):
        before = stored if isinstance(stored, Mapping) else {}
        return {
            str(name): _no_secret(
                str(name), item, before.get(str(name), _ABSENT), path=f"{path}.{name}"
            )
            for name, item in value.items()
        }
    if isinstance(value, list):
        before_items = stored if isinstance(stored, list) else []
        return [
            _no_secret(
                key,
                item,
                before_items[index] if index < len(before_items) else _ABSENT,
                path=f"{path}[{index}]",
            )
            for index, item in enumerate(value)
        ]
    return value


DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(endpoint: str) -> tuple[str, str, int | None]:
    """Where an endpoint sends what it is given: scheme, host and port (the scheme's
    default port when none is written)."""
    try:
        parts = urlsplit(endpoint.strip())
        scheme = parts.scheme.lower()
        return scheme, (parts.hostname or ""), parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return "", endpoint.strip(), None


def stored_credentials_check(
    *, manager: FabricManager, endpoint: str, entered: CredentialsInput
) -> None:
    """Refuse to use `manager`'s stored credentials with an endpoint on another scheme,
    host or port: an edit (or a test of it) left blank would otherwise send the stored
    secret to an address the operator just typed. Raises ValidationError naming
    `password` (the credentials are not decrypted to tell a token from a password: only a
    driver's construction decrypts them).
    """
    if entered.clear or entered.is_given() or not manager.credentials_ciphertext:
        return
    if _origin(endpoint) == _origin(manager.endpoint):
        return
    raise ValidationError(
        {
            "password": "The endpoint's address changed: enter the credentials again (a "
            "username and password, or a token). The stored ones are only sent to the "
            "address they were saved for."
        }
    )


def settings_check(
    options: Mapping[str, Any],
    *,
    verify_tls: bool,
    ca_bundle: str,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The settings to store: the driver's options with the TLS options under their keys.

    A secret-looking key may only keep its stored value (a page shows it as the mask):
    secrets belong in the credentials, which are encrypted. Raises ValidationError naming
    `settings` or `ca_bundle`.
    """
    if not isinstance(options, Mapping):
        raise ValidationError({"settings": "Settings must be a JSON object."})
    previous = previous or {}
    merged: dict[str, Any] = {}
    for key, value in options.items():
        key = str(key)
        if key in TLS_KEYS:
            raise ValidationError(
                {
                    "settings": f"Set {key!r} with its own field (TLS verification, CA "
                    "bundle), not in the settings."
                }
            )
        merged[key] = _no_secret(key, value, previous.get(key, _ABSENT), path=key)
    ca_bundle = ca_bundle.strip()
    if ca_bundle:
        if not verify_tls:
            raise ValidationError(
                {"ca_bundle": "A CA bundle is only used when TLS verification is on."}
            )
        if not os.path.isabs(ca_bundle):
            raise ValidationError(
                {"ca_bundle": "Enter the CA bundle's full path, e.g. /etc/ssl/certs/fabric.pem."}
            )
        if not os.path.isfile(ca_bundle):
            raise ValidationError(
                {"ca_bundle": f"There is no file at {ca_bundle} on the console's server."}
            )
        merged["ca_bundle"] = ca_bundle
    merged["verify_tls"] = bool(verify_tls)
    return merged


def _json_text_problem(value: Any, *, where: str = "Settings") -> str | None:
    """Why a settings value cannot be stored as given, or None: keys are names, strings
    free text (`fabric.validators.text_problem`: no NUL, which PostgreSQL refuses, no
    unpaired surrogate, no terminal escape or other control character)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            problem = text_problem(str(key))
            if problem:
                return f"{where}: key {str(key)!r}: {problem}"
            problem = _json_text_problem(item, where=f"{where}: {key}")
            if problem:
                return problem
    elif isinstance(value, list):
        for item in value:
            problem = _json_text_problem(item, where=where)
            if problem:
                return problem
    elif isinstance(value, str):
        problem = text_problem(value, multiline=True)
        if problem:
            return f"{where}: {problem}"
    return None


def manager_build(*, data: ManagerInput, manager: FabricManager | None = None) -> FabricManager:
    """An unsaved manager with `data` applied (a copy of `manager` for an edit), checked.

    Raises ValidationError naming each field at fault (unknown driver, a name in use, an
    endpoint with a password in it, secret-looking settings, a missing CA bundle).
    Credentials are checked apart (`credentials_check`): a connection test uses them
    without storing them.
    """
    errors: dict[str, list[str]] = {}
    try:
        check_text_fields(
            names={"name": data.name, "endpoint": data.endpoint, "ca_bundle": data.ca_bundle}
        )
    except ValidationError as exc:
        errors.update(exc.message_dict)
    problem = _json_text_problem(data.settings)
    if problem:
        errors.setdefault("settings", []).append(problem)
    if errors:
        raise ValidationError(errors)
    previous = dict(manager.settings or {}) if manager is not None else {}
    built = FabricManager() if manager is None else FabricManager.objects.get(pk=manager.pk)
    built.name = data.name.strip()
    built.driver = data.driver
    built.is_enabled = data.is_enabled
    built.health_poll_interval_s = data.health_poll_interval_s
    for check in (
        lambda: setattr(built, "endpoint", endpoint_check(data.endpoint)),
        lambda: setattr(
            built,
            "settings",
            settings_check(
                data.settings,
                verify_tls=data.verify_tls,
                ca_bundle=data.ca_bundle,
                previous=previous,
            ),
        ),
    ):
        try:
            check()
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                errors.setdefault(name, []).extend(messages)
    try:
        built.full_clean(exclude=[*errors, "credentials_ciphertext"])
    except ValidationError as exc:
        for name, messages in exc.message_dict.items():
            errors.setdefault(name, []).extend(messages)
    if errors:
        raise ValidationError(errors)
    return built
