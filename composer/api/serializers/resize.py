"""A resize in the API: its body (`add`, `remove`) with the JSON Schema and type checks of a
spec's items, and its plan. Tenant members get no fabric internals: what is added comes as
a plan does (`plan_public`), what is removed by allocation id, name, kind and size."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from composer.api.serializers.compositions import PlanSerializer, plan_public
from composer.api.serializers.spec import ITEM_SCHEMA, SpecField, schema_type_errors
from composer.errors import SpecError
from composer.services.resize.asks import ADD_KINDS, LARGEST_ID
from composer.specs import LIMITS, MAX_DEVICES, MAX_ITEMS

__all__ = [
    "ResizePlanSerializer",
    "ResizeRejectedSerializer",
    "ResizeRequestSerializer",
    "resize_plan_public",
]

ADD_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Something to add: devices of one kind (and model), as a request's items "
    "are, or a share of one GPU (share); or CXL memory as an amount (kind cxl_memory and "
    "gib, nothing else).",
    "properties": {
        **ITEM_SCHEMA["properties"],
        "kind": {"type": "string", "enum": list(ADD_KINDS)},
        "gib": {
            "type": "integer",
            "minimum": 1,
            "maximum": LIMITS["memory_gib"],
            "nullable": True,
            "description": "CXL memory only: how many GiB to add, as one slice.",
        },
    },
    "required": ["kind"],
    "additionalProperties": False,
}
ADD_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": ADD_ENTRY_SCHEMA,
    "maxItems": MAX_ITEMS,
    "description": "What to add, placed on the composition's host under its own rules.",
}
REMOVE_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "integer", "minimum": 1, "maximum": LARGEST_ID},
    "maxItems": MAX_DEVICES,
    "description": "The ids of allocations the composition holds (`allocations[].id`) to "
    "unbind and give back.",
}


class _TypedList(serializers.JSONField):
    """A list whose entries must have the JSON types `schema` names; a value of another
    type is a SpecError naming where (`add[0].count`), as the service's own checks are."""

    schema: dict[str, Any] = {}

    def __init__(self, *, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        errors = schema_type_errors(self.schema, value, self.name)
        if errors:
            where, messages = next(iter(errors.items()))
            raise SpecError(messages[0], field=where)
        return value


@extend_schema_field(ADD_SCHEMA)
class AddField(_TypedList):
    schema = ADD_SCHEMA


@extend_schema_field(REMOVE_SCHEMA)
class RemoveField(_TypedList):
    schema = REMOVE_SCHEMA


class ResizeRequestSerializer(serializers.Serializer):
    """Body of POST /compositions/{id}/resize/ and its preview: what to add, what to give
    back (either may be left out, not both)."""

    add = AddField(name="add", required=False)
    remove = RemoveField(name="remove", required=False)


class RemovedSerializer(serializers.Serializer):
    """A device (or a slice, a share) the resize gives back."""

    allocation = serializers.IntegerField(help_text="The allocation's id.")
    name = serializers.CharField()
    kind = serializers.CharField()
    gib = serializers.IntegerField(allow_null=True, help_text="A CXL memory slice's size.")
    share = serializers.IntegerField(allow_null=True, help_text="A share of a GPU, thousandths.")


class ResizePlanSerializer(PlanSerializer):
    """A resize's plan: what is added (`devices`, `memory`, with their paths; the
    explanation), what is removed, and the composition's request once resized; or, with
    `ok` false, why nothing fits and the nearest alternative."""

    remove = RemovedSerializer(many=True, required=False)
    spec = SpecField(required=False, read_only=True, help_text="The request once resized.")


class ResizeRejectedSerializer(serializers.Serializer):
    """422 body of a resize that does not fit now: the error shape plus the rejection."""

    code = serializers.CharField(help_text="`placement_rejected`.")
    detail = serializers.CharField()
    field = serializers.CharField(allow_null=True)
    # As in PlacementRejectedSerializer: DRF's metaclass takes declared fields off the class.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField())
    )
    rejection = ResizePlanSerializer()


def resize_plan_public(plan: dict[str, Any], *, operator: bool) -> dict[str, Any]:
    """A resize's stored plan (`composer.services.resize.resize_preview`) for one reader:
    `plan_public` for what is added, the removals without snapshot ids, the spec."""
    out = plan_public(plan, operator=operator) or {"ok": False, "funnel": []}
    keep = ("allocation", "name", "kind", "gib", "share")
    out["remove"] = [{k: r.get(k) for k in keep} for r in plan.get("remove") or []]
    if plan.get("spec") is not None:
        out["spec"] = plan["spec"]
    return out
