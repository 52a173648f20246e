"""Placement policies as a registry: each policy one object with its words, its constraint
and its score (`base.Policy`); the shipped ones are declared in `builtin.py`. Pure Python.

Everything that needs a policy reads it from here: the engine, the nearest-alternative
search, heal, the forms' choices, the API's enum and the spec's validation. Adding a policy
touches one module: a `Policy` subclass registered in `builtin.py` (docs/placement.md).
"""

from __future__ import annotations

from composer.placement.policies.base import (
    CORE_FIT_WEIGHT,
    NAMES,
    TENANT_HOST_PENALTY,
    Policy,
    checking,
    choice,
    choices,
    conflict,
    enabled,
    everyone,
    fits,
    flagged,
    isolating,
    named,
    register,
    registered,
    selectable,
    selected,
    unregister,
)
from composer.placement.policies.builtin import (
    CRITICAL,
    ENCLOSURE,
    NONE,
    PACK,
    SAME_SWITCH,
    SWITCH,
)

__all__ = [
    "CORE_FIT_WEIGHT",
    "CRITICAL",
    "ENCLOSURE",
    "NAMES",
    "NONE",
    "PACK",
    "SAME_SWITCH",
    "SWITCH",
    "TENANT_HOST_PENALTY",
    "Policy",
    "checking",
    "choice",
    "choices",
    "conflict",
    "enabled",
    "everyone",
    "fits",
    "flagged",
    "isolating",
    "named",
    "register",
    "registered",
    "selectable",
    "selected",
    "unregister",
]
