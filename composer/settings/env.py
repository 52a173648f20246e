"""Typed readers for configuration that comes from environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """Return the variable's value, or `default` when it is unset."""
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """Read a boolean (from `environ` when given, else the process's environment); a value
    that is not a recognised word is a configuration error."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name} must be one of 1/0, true/false, yes/no, on/off; got {raw!r}"
    )


def env_int(name: str, default: int) -> int:
    """Read an integer, naming the variable when the value is not one."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer; got {raw!r}") from exc


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    """Read a comma-separated list, dropping blanks."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]
