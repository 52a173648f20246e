"""Serializers of composer's API: jobs, the token exchange, templates, quotas, compositions.

Tenant members never get fabric internals here: devices come as id, name, kind, model and
size (no serial, slot or enclosure), and a placement without the snapshot ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from composer.errors import SpecError
from composer.models import (
    Allocation,
    Composition,
    Job,
    JobLogLine,
    Quota,
    StateChange,
    Template,
    Tenant,
)
from composer.placement.audience import plan_for
from composer.specs import spec_normalise
from fabric.permissions import is_operator

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class TenantRefSerializer(serializers.ModelSerializer):
    """A tenant by id, slug and name."""

    class Meta:
        model = Tenant
        fields = ["id", "slug", "name"]
        read_only_fields = fields


class JobLogLineSerializer(serializers.ModelSerializer):
    """One captured log line of a job."""

    class Meta:
        model = JobLogLine
        fields = ["id", "at", "level", "logger", "message"]
        read_only_fields = fields


class JobSerializer(serializers.HyperlinkedModelSerializer):
    """A job as listed: what it works on, where it stands, how far it got.

    `tenant` is null for fabric work (inventory sync), which only operators see.
    """

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:job_detail")
    tenant = TenantRefSerializer(read_only=True, allow_null=True)
    requested_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="Username of who asked for it; null for scheduled work.",
    )
    progress_percent = serializers.IntegerField(
        read_only=True,
        min_value=0,
        max_value=100,
        help_text="0-100; a succeeded job is at 100.",
    )
    duration_s = serializers.FloatField(
        read_only=True, allow_null=True, help_text="Seconds since it started (or until it ended)."
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "url",
            "kind",
            "status",
            "tenant",
            "requested_by",
            "target_type",
            "target_id",
            "target_label",
            "params",
            "result",
            "progress_done",
            "progress_total",
            "progress_percent",
            "message",
            "error",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
            "duration_s",
        ]
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    """A job with its log, oldest line first."""

    log_lines = JobLogLineSerializer(many=True, read_only=True)

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "log_lines"]
        read_only_fields = fields


class TokenRequestSerializer(serializers.Serializer):
    """Credentials exchanged for an API token."""

    username = serializers.CharField(max_length=150)
    password = serializers.CharField(
        max_length=4096, trim_whitespace=False, style={"input_type": "password"}, write_only=True
    )


class TokenSerializer(serializers.Serializer):
    """The caller's API token: send it as `Authorization: Token <token>`."""

    token = serializers.CharField(source="key", read_only=True)


# --- templates and quotas ---------------------------------------------------------------------


class TemplateSerializer(serializers.HyperlinkedModelSerializer):
    """A named request shape. `spec` is a composition spec (see `CompositionSpec`), stored
    normalised; operators create and change templates, everyone signed in reads them."""

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:template_detail", lookup_field="slug")
    spec = serializers.JSONField(
        help_text="A composition spec: items, memory_gib, storage_tb, cores, host_memory_gib, "
        "host, max_latency_ns, policy, same_switch, critical, self_heal. Stored normalised."
    )

    class Meta:
        model = Template
        fields = ["id", "url", "name", "slug", "description", "spec", "is_active", "updated_at"]
        read_only_fields = ["id", "url", "updated_at"]

    def validate_spec(self, value: Any) -> dict[str, Any]:
        try:
            return spec_normalise(value)
        except SpecError as exc:
            raise serializers.ValidationError(exc.message) from exc


class QuotaUsageSerializer(serializers.Serializer):
    """What the tenant's active compositions hold of this quota now."""

    count = serializers.IntegerField(help_text="Whole devices held.")
    memory_gib = serializers.IntegerField(help_text="GiB of CXL memory held (slices).")
    storage_tb = serializers.FloatField(help_text="TB of NVMe capacity held.")


class QuotaSerializer(serializers.HyperlinkedModelSerializer):
    """A tenant's limit on one device kind (and optionally one model), with what is in use.

    A null limit means no limit; a blank `model` covers every model of the kind.
    """

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:quota_detail")
    tenant = serializers.SlugRelatedField(
        slug_field="slug", queryset=Tenant.objects.all(), help_text="The tenant's slug."
    )
    # The stubs see Field.label overridden; DRF's metaclass takes declared fields off the class.
    label = serializers.CharField(  # type: ignore[assignment]
        read_only=True, help_text='e.g. "GPU (H100 PCIe 80GB)".'
    )
    usage = serializers.SerializerMethodField()

    class Meta:
        model = Quota
        fields = [
            "id",
            "url",
            "tenant",
            "kind",
            "model",
            "label",
            "max_count",
            "max_memory_gib",
            "max_storage_tb",
            "usage",
        ]
        read_only_fields = ["id", "url", "label", "usage"]
        validators: list[Any] = []  # uniqueness and limits checked in validate()

    @extend_schema_field(QuotaUsageSerializer)
    def get_usage(self, quota: Quota) -> dict[str, Any]:
        usage = self.context.get("usage") or {}
        return usage.get(quota.pk) or {"count": 0, "memory_gib": 0, "storage_tb": 0.0}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance = self.instance or Quota()
        for name, value in attrs.items():
            setattr(instance, name, value)
        try:
            instance.full_clean(exclude=["tenant"] if "tenant" not in attrs else None)
        except DjangoValidationError as exc:
            errors = {k if k != "__all__" else "kind": v for k, v in exc.message_dict.items()}
            raise serializers.ValidationError(errors) from exc
        return attrs


# --- compositions ---------------------------------------------------------------------------


class CompositionSpecSerializer(serializers.Serializer):
    """A custom request; every key optional. Documentation only: the spec is checked by
    `composer.specs.spec_normalise`, whose errors name the field (`spec.items[0].count`)."""

    items = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text='Devices: [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2, '
        '"minima": {"memory_gib": 80}}]; kind is gpu, nvme, nic, dpu or fpga.',
    )
    memory_gib = serializers.IntegerField(required=False, help_text="CXL memory in GiB.")
    storage_tb = serializers.FloatField(required=False, help_text="NVMe capacity in TB.")
    cores = serializers.IntegerField(required=False, help_text="Free cores on the host.")
    host_memory_gib = serializers.IntegerField(required=False, help_text="Free host DRAM.")
    max_latency_ns = serializers.IntegerField(
        required=False, allow_null=True, help_text="Ceiling from the host to every device."
    )
    policy = serializers.ChoiceField(
        choices=["none", "enclosure", "switch", "pack"], required=False
    )
    same_switch = serializers.BooleanField(required=False)
    critical = serializers.BooleanField(required=False)
    self_heal = serializers.BooleanField(
        required=False,
        help_text="Replace a failed device automatically from a spare under the same rules "
        "(a heal job); without it, a degraded composition can be healed on request.",
    )


class CompositionRequestSerializer(serializers.Serializer):
    """Body of POST /compositions/ and /compositions/preview/.

    Give a `template` (slug), a custom `spec`, or both (the spec then overrides the
    template key by key). `tenant` is needed only by operators and by members of several
    tenants.
    """

    name = serializers.CharField(max_length=100, required=False, help_text="Required to compose.")
    tenant = serializers.SlugField(
        required=False, help_text="Slug of one of your tenants (operators: any tenant)."
    )
    template = serializers.SlugField(required=False, help_text="Slug of an active template.")
    spec = serializers.JSONField(
        required=False, help_text="A custom request (see CompositionSpec)."
    )
    host = serializers.CharField(
        required=False, allow_null=True, max_length=200, help_text="A host name or id; any."
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
        help_text='[["kind/model/count", 64, 12], ...]: constraint, before, after.',
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
    keep = ("name", "kind", "latency_ns", "bottleneck_gbps", "gib")
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
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_job(self, composition: Composition) -> str | None:
        job_id = getattr(composition, "latest_job_id", None)
        if job_id is None:
            return None
        return reverse("api:job_detail", args=[job_id], request=self.context.get("request"))


class CompositionDetailSerializer(CompositionSerializer):
    """A composition with its request, plan (explanation, score, paths, funnel), devices and
    state history."""

    spec = serializers.JSONField(read_only=True, help_text="The normalised request.")
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
