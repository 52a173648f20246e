"""A composition spec in the API: its JSON Schema (`CompositionSpec`) and a field that holds
bodies to the JSON types the schema names.

`composer.specs.spec_normalise` checks the spec's meaning (ranges, kinds, policies, unknown
keys) for every path, the console's form included, and is lenient about types the way a
form must be: "2" for a count, 0 for false, an empty policy for "none". The API says
`integer`, `boolean` and an enum in its schema, so `SpecField` first refuses a JSON value of
another type, naming where (`spec.items[0].count`), then leaves the rest to the service.
The schema is built from the same constants (`composer.specs`) so the two cannot drift.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

import composer.placement.policies as policies
from composer.errors import SpecError
from composer.specs import DEVICE_KINDS, KEYS, LIMITS, MAX_DEVICES, MAX_ITEMS, MAX_SHARE

INTEGER, NUMBER, STRING, BOOLEAN = "integer", "number", "string", "boolean"


def _number(kind: str, maximum: float, *, minimum: float = 0, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "minimum": minimum, "maximum": maximum, **extra}


ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Devices of one kind (and model), each meeting the minima.",
    "properties": {
        "kind": {"type": STRING, "enum": list(DEVICE_KINDS)},
        "model": {"type": STRING, "nullable": True, "maxLength": 100},
        "count": _number(INTEGER, LIMITS["count"], minimum=1, default=1),
        "minima": {
            "type": "object",
            "description": "Lower bounds on the devices' numbers: memory_gib, capacity_gb or "
            "a number the fabric manager reports for the kind.",
            "additionalProperties": _number(NUMBER, LIMITS["minimum"]),
        },
        "share": _number(
            INTEGER,
            MAX_SHARE,
            minimum=1,
            nullable=True,
            description="A share of ONE device of a kind that splits into shares (a GPU: "
            "thousandths, 1 to 999), beside other compositions on the host it is bound to; "
            "count 1. More shares are more items.",
        ),
    },
    "required": ["kind"],
    "additionalProperties": False,
}
PIN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One device taken exactly as named: whole, or a slice of a CXL memory "
    "device (gib; without it, all of the device's free GiB).",
    "properties": {
        "device": {
            "oneOf": [{"type": STRING, "maxLength": 200}, {"type": INTEGER, "minimum": 1}],
            "description": "The device's name or id.",
        },
        "gib": _number(
            INTEGER, LIMITS["memory_gib"], minimum=1, nullable=True, description="CXL memory only."
        ),
    },
    "required": ["device"],
    "additionalProperties": False,
}
SPEC_PROPERTIES: dict[str, dict[str, Any]] = {
    "items": {"type": "array", "items": ITEM_SCHEMA, "maxItems": MAX_ITEMS},
    "devices": {
        "type": "array",
        "items": PIN_SCHEMA,
        "maxItems": MAX_DEVICES,
        "description": "Devices named exactly (a specific composition), on a host that "
        "reaches them all; in addition to, or instead of, items and memory_gib.",
    },
    "memory_gib": _number(INTEGER, LIMITS["memory_gib"], description="CXL memory in GiB."),
    "storage_tb": _number(NUMBER, LIMITS["storage_tb"], description="NVMe capacity in TB."),
    "cores": _number(INTEGER, LIMITS["cores"], description="Free cores on the host."),
    "host_memory_gib": _number(
        INTEGER, LIMITS["host_memory_gib"], description="Free DRAM on the host, in GiB."
    ),
    "host": {
        "oneOf": [{"type": STRING, "maxLength": 200}, {"type": INTEGER, "minimum": 1}],
        "nullable": True,
        "description": "A host name or id; null: any host.",
    },
    "max_latency_ns": _number(
        INTEGER,
        LIMITS["max_latency_ns"],
        minimum=1,
        nullable=True,
        description="Ceiling on the path latency from the host to every device.",
    ),
    "policy": {
        "type": STRING,
        # The registry's live list: a policy registered later is in the schema too.
        "enum": policies.NAMES,
        "description": "Failure-domain policy: spread over enclosures or switches, or pack.",
    },
    "same_switch": {"type": BOOLEAN},
    "critical": {"type": BOOLEAN},
    "self_heal": {
        "type": BOOLEAN,
        "description": "Replace a failed device from a spare under the same rules (a heal "
        "job); without it, a degraded composition is healed on request.",
    },
}
SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "CompositionSpec",
    "description": "A composition request: devices (items, or named devices), CXL memory, "
    "NVMe storage, host "
    "resources and placement rules; every key optional. Stored normalised, every key present.",
    "properties": {key: SPEC_PROPERTIES[key] for key in KEYS},
    "additionalProperties": False,
}
# JSON types each value may take: the schema's, as Python types (bool is not an int here).
_TYPES: dict[str, tuple[type, ...]] = {
    INTEGER: (int,),
    NUMBER: (int, float),
    STRING: (str,),
    BOOLEAN: (bool,),
}
_NAMES = {INTEGER: "a whole number", NUMBER: "a number", STRING: "text", BOOLEAN: "true or false"}


def spec_type_errors(spec: Any) -> dict[str, list[str]]:
    """{"items[0].count": ["Must be a whole number."]} for every value whose JSON type the
    schema does not allow (the values' ranges and meaning are the service's to check)."""
    if not isinstance(spec, dict):
        return {"": ["The spec must be an object."]}
    errors: dict[str, list[str]] = {}
    for key, value in spec.items():
        if key in SPEC_PROPERTIES:
            _check(SPEC_PROPERTIES[key], value, key, errors)
    return errors


def schema_type_errors(schema: dict[str, Any], value: Any, where: str) -> dict[str, list[str]]:
    """{"add[0].count": ["Must be a whole number."]} for every value in `value` (found at
    `where`) whose JSON type `schema` does not allow: the check `SpecField` makes, for the
    other bodies that carry spec items (a resize's `add`)."""
    errors: dict[str, list[str]] = {}
    _check(schema, value, where, errors)
    return errors


def _check(schema: dict[str, Any], value: Any, where: str, errors: dict[str, list[str]]) -> None:
    if value is None and schema.get("nullable"):
        return
    if "oneOf" in schema:
        kinds = [option["type"] for option in schema["oneOf"]]
        if not any(_is(kind, value) for kind in kinds):
            errors[where] = [f"Must be {' or '.join(_NAMES[k] for k in kinds)}."]
        return
    kind = schema["type"]
    if kind == "array":
        if not isinstance(value, list):
            errors[where] = ["Must be a list."]
            return
        for index, item in enumerate(value):
            _check(schema["items"], item, f"{where}[{index}]", errors)
    elif kind == "object":
        if not isinstance(value, dict):
            errors[where] = ["Must be an object."]
            return
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for name, child in value.items():
            rule = properties.get(name, extra if isinstance(extra, dict) else None)
            if rule is not None:
                _check(rule, child, f"{where}.{name}", errors)
    elif not _is(kind, value):
        errors[where] = [f"Must be {_NAMES[kind]}."]
    elif "enum" in schema and value == "":  # the service reads "" as the default
        errors[where] = [f"Must be one of {', '.join(schema['enum'])}."]


def _is(kind: str, value: Any) -> bool:
    return isinstance(value, _TYPES[kind]) and (kind == BOOLEAN or not isinstance(value, bool))


@extend_schema_field(SPEC_SCHEMA)
class SpecField(serializers.JSONField):
    """A composition spec in a JSON body: an object whose values have the schema's types.

    A value that is not an object is an error of the field (`spec`). A type error inside
    it is too, its message naming the part (`items[0].count: Must be a whole number.`), as
    a template's other spec errors are; with `spec_errors` it is a SpecError instead (code
    `invalid_spec`, field `spec.items[0].count`), as the service's own checks of a
    composition request answer.
    """

    def __init__(self, *, spec_errors: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec_errors = spec_errors

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        errors = spec_type_errors(value)
        if not errors:
            return value
        if "" in errors:
            raise serializers.ValidationError(errors[""])
        if self.spec_errors:
            where, messages = next(iter(errors.items()))
            raise SpecError(messages[0], field=f"spec.{where}")
        raise serializers.ValidationError(
            [f"{where}: {message}" for where, messages in errors.items() for message in messages]
        )
