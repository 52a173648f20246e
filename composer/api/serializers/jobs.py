"""Jobs as the API shows them (what they work on, where they stand, their log), and the
tenant reference every composer resource uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import serializers

from composer.models import Job, JobLogLine, Tenant

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
