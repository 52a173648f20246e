"""Templates (named request shapes) and quotas (each tenant's limits, with their use)."""

from __future__ import annotations

import copy
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from composer.api.serializers.spec import SpecField
from composer.errors import SpecError
from composer.models import Quota, Template, Tenant
from composer.recurrence import schedule_normalise
from composer.specs import spec_normalise
from fabric.api.fields import StrictModelSerializerMixin
from fabric.validators import text_problem


class TemplateSerializer(StrictModelSerializerMixin, serializers.HyperlinkedModelSerializer):
    """A named request shape. `spec` is a composition spec (see `CompositionSpec`), stored
    normalised; operators create and change templates, everyone signed in reads them."""

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:template_detail", lookup_field="slug")
    spec = SpecField(help_text="A composition spec, stored normalised.")
    schedule = serializers.JSONField(
        required=False,
        help_text="The default window of a booking from this template: recurrence (none, "
        "daily, weekdays, weekly), starts and ends (local HH:MM; an end at or before the start "
        "is the next day) and time_zone (IANA). {} for none.",
    )

    class Meta:
        model = Template
        fields = [
            "id",
            "url",
            "name",
            "slug",
            "description",
            "spec",
            "schedule",
            "is_active",
            "updated_at",
        ]
        read_only_fields = ["id", "url", "updated_at"]

    def validate_name(self, value: str) -> str:
        return _printable(value, multiline=False)

    def validate_description(self, value: str) -> str:
        return _printable(value, multiline=True)

    def validate_schedule(self, value: Any) -> dict[str, str]:
        try:
            return schedule_normalise(value)
        except SpecError as exc:
            raise serializers.ValidationError(exc.message) from exc

    def validate_spec(self, value: Any) -> dict[str, Any]:
        try:
            return spec_normalise(value)
        except SpecError as exc:
            raise serializers.ValidationError(exc.message) from exc


class QuotaUsageSerializer(serializers.Serializer):
    """What the tenant's active compositions hold of this quota now."""

    count = serializers.FloatField(
        help_text="Devices held; a share of a GPU counts as its fraction of one (0.25)."
    )
    memory_gib = serializers.IntegerField(help_text="GiB of CXL memory held (slices).")
    storage_tb = serializers.FloatField(help_text="TB of NVMe capacity held.")


class QuotaSerializer(StrictModelSerializerMixin, serializers.HyperlinkedModelSerializer):
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
        # Checked on a copy: the quota itself changes only when it is saved.
        instance = copy.copy(self.instance) if self.instance is not None else Quota()
        for name, value in attrs.items():
            setattr(instance, name, value)
        try:
            # The tenant's uniqueness (tenant, kind, model) is checked whenever there is a
            # tenant: a partial update names no tenant but the quota has one.
            has_tenant = "tenant" in attrs or self.instance is not None
            instance.full_clean(exclude=None if has_tenant else ["tenant"])
        except DjangoValidationError as exc:
            errors = {k if k != "__all__" else "kind": v for k, v in exc.message_dict.items()}
            raise serializers.ValidationError(errors) from exc
        return attrs


def _printable(value: str, *, multiline: bool) -> str:
    """`value`, or a field error when it holds what may not be stored (`fabric.validators`)."""
    problem = text_problem(value, multiline=multiline)
    if problem is not None:
        raise serializers.ValidationError(problem)
    return value
