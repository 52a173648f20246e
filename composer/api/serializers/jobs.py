"""Jobs as the API shows them (what they work on, where they stand, their log), and the
tenant reference every composer resource uses.

A job's log has two shapes: operators read every line with the logger that wrote it
(`JobLogLine`); members of the job's tenant read the lines written for them, in their words
(`TenantJobLogLine`: no logger), as `composer.selectors.jobs.job_log` gives them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from composer.models import Job, Tenant
from composer.selectors.jobs import LogLine, job_log, job_result
from fabric.api.serializers import for_caller
from fabric.permissions import is_operator

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class TenantRefSerializer(serializers.ModelSerializer):
    """A tenant by id, slug and name."""

    class Meta:
        model = Tenant
        fields = ["id", "slug", "name"]
        read_only_fields = fields


class TenantJobLogLineSerializer(serializers.Serializer):
    """One line of a job's log as a member of its tenant reads it: the job's own steps in
    the tenant's words (its devices bound, verified, released; why it failed)."""

    id = serializers.IntegerField(read_only=True)
    at = serializers.DateTimeField(read_only=True)
    level = serializers.CharField(read_only=True, help_text="INFO, WARNING or ERROR.")
    message = serializers.CharField(read_only=True)


class JobLogLineSerializer(TenantJobLogLineSerializer):
    """One captured log line of a job, as operators read it: every line, the fabric
    manager's and the driver's included, with the logger that wrote it."""

    logger = serializers.CharField(read_only=True, help_text="The logger that wrote it.")


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
    lease = serializers.SerializerMethodField(
        help_text="Operators only (null for others, and when no worker holds it): the worker "
        "process that runs it and when its lease expires; past that it is taken as dead and "
        "the job resumes elsewhere."
    )
    result = serializers.SerializerMethodField(
        help_text="What the job did. Members of the job's tenant read the composition, its "
        "state and host, and what a heal replaced; operators also the manager's binding ids."
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
            "resumes",
            "lease",
            "created_at",
            "started_at",
            "finished_at",
            "duration_s",
        ]
        read_only_fields = fields

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "owner": {"type": "string"},
                "expires_at": {"type": "string", "format": "date-time", "nullable": True},
            },
        }
    )
    def get_lease(self, job: Job) -> dict[str, object] | None:
        request = self.context.get("request")
        if not job.lease_owner or request is None or not is_operator(request.user):
            return None
        expires = job.lease_expires_at.isoformat() if job.lease_expires_at else None
        return {"owner": job.lease_owner, "expires_at": expires}

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_result(self, job: Job) -> dict[str, object]:
        request = self.context.get("request")
        return job_result(job=job, operator=request is not None and is_operator(request.user))


class JobDetailSerializer(JobSerializer):
    """A job with its log, oldest line first."""

    log_lines = serializers.SerializerMethodField(
        help_text=(
            "Oldest first. Operators get every line with its logger; members of the job's "
            "tenant the lines about their job, in their words, without one."
        )
    )

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "log_lines"]
        read_only_fields = fields

    @extend_schema_field(
        for_caller(
            "JobLogLineForCaller", JobLogLineSerializer, TenantJobLogLineSerializer, many=True
        )
    )
    def get_log_lines(self, job: Job) -> list[dict[str, Any]]:
        request = self.context.get("request")
        operator = request is not None and is_operator(request.user)
        lines: list[LogLine] = job_log(job=job, operator=operator).lines
        shape = JobLogLineSerializer if operator else TenantJobLogLineSerializer
        return list(shape(lines, many=True).data)
