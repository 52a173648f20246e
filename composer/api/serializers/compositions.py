"""Compositions: the request body, the plan or rejection, and the composition as listed and
in detail. Tenant members never get fabric internals here: devices come as id, name, kind,
model and size (no serial, slot or enclosure), and a placement without the snapshot ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from composer.api.serializers.jobs import TenantRefSerializer
from composer.api.serializers.spec import SpecField
from composer.models import Allocation, Composition, StateChange, Template
from composer.placement.audience import plan_for
from fabric.api.fields import StrictCharField, StrictSlugField
from fabric.permissions import is_operator
from fabric.validators import validate_name

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@extend_schema_field(
    {
        "oneOf": [{"type": "string", "maxLength": 200}, {"type": "integer", "minimum": 1}],
        "nullable": True,
    }
)
class HostField(serializers.CharField):
    """A host by name (a JSON string) or console id (a JSON number); null: any host."""

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, bool) or not isinstance(data, str | int):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class CompositionRequestSerializer(serializers.Serializer):
    """Body of POST /compositions/ and /compositions/preview/.

    Give a `template` (slug), a custom `spec`, or both (the spec then overrides the
    template key by key). `tenant` is needed only by operators and by members of several
    tenants.
    """

    name = StrictCharField(
        max_length=100,
        required=False,
        validators=[validate_name],
        help_text="Required to compose.",
    )
    tenant = StrictSlugField(
        required=False, help_text="Slug of one of your tenants (operators: any tenant)."
    )
    template = StrictSlugField(required=False, help_text="Slug of an active template.")
    spec = SpecField(
        required=False, spec_errors=True, help_text="A custom request; overrides the template's."
    )
    host = HostField(
        required=False, allow_null=True, max_length=200, help_text="A host name or id; any."
    )
    hold_s = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Hold instead of composing: place and claim the devices, bind nothing, "
        "and keep them this many seconds (10 to 86,400); then apply or release the hold, or "
        "it lapses. Not for previews.",
    )
    override_bookings = serializers.CharField(
        required=False,
        max_length=300,
        help_text="Operators only: let the composition take devices that booked windows "
        "need, and say why (recorded in its history). Left out, booked devices are never "
        "taken.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("template") and attrs.get("spec") in (None, {}):
            raise serializers.ValidationError(
                {"template": ["Pick a template or give a custom spec."]}
            )
        spec = attrs.get("spec")
        if spec is not None and not isinstance(spec, dict):
            raise serializers.ValidationError({"spec": ["The spec must be an object."]})
        return attrs


class PathSerializer(serializers.Serializer):
    """One chosen device (or CXL memory slice) and its path from the host."""

    name = serializers.CharField()
    kind = serializers.CharField()
    latency_ns = serializers.IntegerField()
    bottleneck_gbps = serializers.FloatField()
    gib = serializers.IntegerField(allow_null=True)
    share = serializers.IntegerField(
        allow_null=True,
        required=False,
        help_text="The share of the GPU taken, in thousandths of it; null when taken whole.",
    )


class PlanSerializer(serializers.Serializer):
    """A placement plan (`ok` true) or a rejection (`ok` false), without fabric internals.

    The funnel lists, in order, each constraint with the candidates before and after it.
    """

    ok = serializers.BooleanField()
    host_name = serializers.CharField(required=False)
    score = serializers.FloatField(required=False, allow_null=True)
    explanation = serializers.ListField(child=serializers.CharField(), required=False)
    devices = PathSerializer(many=True, required=False)
    memory = PathSerializer(many=True, required=False)
    funnel = serializers.ListField(
        child=serializers.ListField(child=serializers.JSONField()),
        help_text=(
            '[["GPUs: kind and model", 64, 12], ...]: constraint, candidates before, after. '
            "Tenant members get the steps that count hosts without their counts: "
            '["hosts: latency ceiling", null, null] when some host was left, with 0 after '
            "when none was."
        ),
    )
    code = serializers.CharField(required=False, help_text="Rejection code.")
    message = serializers.CharField(required=False, help_text="Why nothing fits.")
    nearest = serializers.CharField(required=False, help_text="The nearest feasible alternative.")


def plan_public(plan: dict[str, Any] | None, *, operator: bool) -> dict[str, Any] | None:
    """A stored placement dict with the snapshot ids (device:12, enclosure:3) left out, its
    sentences in the words of an operator or of a tenant (no fabric internals)."""
    if not plan:
        return None
    plan = plan_for(plan, operator=operator)
    keep = ("name", "kind", "latency_ns", "bottleneck_gbps", "gib", "share")
    out: dict[str, Any] = {"ok": bool(plan.get("ok")), "funnel": plan.get("funnel", [])}
    if out["ok"]:
        out.update(
            host_name=plan.get("host_name", ""),
            score=plan.get("score"),
            explanation=list(plan.get("explanation", [])),
            devices=[{k: p.get(k) for k in keep} for p in plan.get("devices", [])],
            memory=[{k: p.get(k) for k in keep} for p in plan.get("memory", [])],
        )
    else:
        out.update(
            code=plan.get("code", ""),
            message=plan.get("message", ""),
            nearest=plan.get("nearest", ""),
        )
    return out


class DeviceRefSerializer(serializers.Serializer):
    """A device as a tenant may see it: no serial, slot or fabric address."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    model = serializers.CharField()
    memory_gib = serializers.IntegerField(allow_null=True)
    capacity_gb = serializers.IntegerField(allow_null=True)


class AllocationSerializer(serializers.ModelSerializer):
    """One device, or one GiB slice of a CXL memory device, held by the composition."""

    device = DeviceRefSerializer(read_only=True)

    class Meta:
        model = Allocation
        fields = ["id", "device", "gib", "state", "created_at", "bound_at", "released_at"]
        read_only_fields = fields


class StateChangeSerializer(serializers.ModelSerializer):
    """One audited state change: before -> after, why, who, when."""

    actor: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = StateChange
        fields = ["from_state", "to_state", "reason", "actor", "source", "at"]
        read_only_fields = fields


class HostRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class CompositionSerializer(serializers.HyperlinkedModelSerializer):
    """A composition as listed: state, tenant, template, host and its latest job."""

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:composition_detail")
    tenant = TenantRefSerializer(read_only=True)
    template: serializers.SlugRelatedField[Template] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )
    host = HostRefSerializer(read_only=True, allow_null=True)
    requested_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    job = serializers.SerializerMethodField(help_text="URL of the latest compose/decompose job.")

    class Meta:
        model = Composition
        fields = [
            "id",
            "url",
            "name",
            "state",
            "tenant",
            "template",
            "host",
            "requested_by",
            "score",
            "failure_reason",
            "job",
            "created_at",
            "ready_at",
            "released_at",
            "hold_expires_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "hold_expires_at": {
                "help_text": "A held composition: when it lapses (its devices are given back) "
                "unless applied. Null otherwise."
            }
        }

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_job(self, composition: Composition) -> str | None:
        job_id = getattr(composition, "latest_job_id", None)
        if job_id is None:
            return None
        return reverse("api:job_detail", args=[job_id], request=self.context.get("request"))


class CompositionDetailSerializer(CompositionSerializer):
    """A composition with its request, plan (explanation, score, paths, funnel), devices and
    state history."""

    spec = SpecField(read_only=True, help_text="The normalised request.")
    placement = serializers.SerializerMethodField()
    allocations = AllocationSerializer(many=True, read_only=True)
    history = StateChangeSerializer(many=True, read_only=True, source="state_changes")

    class Meta(CompositionSerializer.Meta):
        fields = [
            *CompositionSerializer.Meta.fields,
            "spec",
            "placement",
            "allocations",
            "history",
        ]
        read_only_fields = fields

    @extend_schema_field(PlanSerializer(allow_null=True))
    def get_placement(self, composition: Composition) -> dict[str, Any] | None:
        request = self.context.get("request")
        operator = request is not None and is_operator(request.user)
        return plan_public(composition.placement, operator=operator)


class PlacementRejectedSerializer(serializers.Serializer):
    """422 body of a rejected placement: the error shape plus the rejection and the
    composition kept (state `rejected`) as its record."""

    code = serializers.CharField(help_text="`placement_rejected`.")
    detail = serializers.CharField()
    field = serializers.CharField(allow_null=True)
    # The stubs see Serializer.errors overridden; DRF's metaclass takes declared fields off the
    # class, so the property stays.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField())
    )
    rejection = PlanSerializer()
    composition = serializers.URLField(help_text="The rejected composition's URL.")
