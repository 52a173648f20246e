"""Django admin for the logical world: tenants and their members, templates and quotas
(managed here by operators, every change audited), compositions with their allocations and
audit trail (read-only: they change only through services), jobs and their logs."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from composer.choices import JobStatus
from composer.errors import ComposerError
from composer.models import (
    AlertAudience,
    Allocation,
    Booking,
    BookingHold,
    ChangeAudience,
    Composition,
    Event,
    EventAudience,
    Job,
    JobLogLine,
    KubernetesClaim,
    KubernetesController,
    Membership,
    Occurrence,
    Quota,
    ReconcileFinding,
    ReconcileRun,
    RedfishSession,
    ServerShape,
    StateChange,
    Template,
    Tenant,
    UnbindPending,
)
from composer.services.changes import change_audience_add
from composer.services.jobs import job_cancel
from fabric.admin import AuditedAdmin, ReadOnlyAdmin
from fabric.models import ChangeRecord


class ComposerAuditedAdmin(AuditedAdmin):
    """Every add, change and delete of a tenant, membership, template or quota is a
    ChangeRecord (operator, address, fields before and after), as for the fabric; a
    quota's record is also its tenant's to read (`composer.services.changes`)."""

    def keep_record(self, record: ChangeRecord, obj: Any) -> None:
        record.save()
        change_audience_add(record=record, obj=obj)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ("user",)
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)


@admin.register(Tenant)
class TenantAdmin(ComposerAuditedAdmin):
    list_display = ("name", "slug", "is_active", "member_count", "created_at")
    list_filter = ("is_active",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        return super().get_queryset(request).annotate(n_members=Count("memberships"))

    @admin.display(description="members", ordering="n_members")
    def member_count(self, obj: Tenant) -> int:
        return getattr(obj, "n_members", 0)


@admin.register(Membership)
class MembershipAdmin(ComposerAuditedAdmin):
    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "user__email", "tenant__name")
    raw_id_fields = ("user",)
    list_select_related = ("user", "tenant")


class JobLogLineInline(admin.TabularInline):
    """The job's log, read-only, in order."""

    model = JobLogLine
    extra = 0
    can_delete = False
    fields = ("at", "level", "logger", "message")
    readonly_fields = fields
    ordering = ("at", "id")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """Jobs are written by services and workers; the admin reads them and can cancel queued ones."""

    list_display = (
        "id",
        "kind",
        "status",
        "target_label",
        "tenant",
        "requested_by",
        "progress_percent",
        "attempts",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "kind", "tenant")
    search_fields = ("target_label", "message", "error")
    date_hierarchy = "created_at"
    list_select_related = ("tenant", "requested_by")
    inlines = [JobLogLineInline]
    actions = ["cancel_queued"]
    show_full_result_count = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in Job._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Cancel selected queued jobs")
    def cancel_queued(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        cancelled = 0
        for job in queryset.filter(status=JobStatus.QUEUED):
            try:
                job_cancel(job=job, actor=request.user)
            except ComposerError as exc:
                self.message_user(request, f"Job {job.pk}: {exc.message}", messages.WARNING)
                continue
            cancelled += 1
        self.message_user(request, f"{cancelled} job(s) cancelled.")


@admin.register(JobLogLine)
class JobLogLineAdmin(admin.ModelAdmin):
    list_display = ("job", "at", "level", "logger", "message")
    list_filter = ("level",)
    search_fields = ("message", "logger")
    raw_id_fields = ("job",)
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Template)
class TemplateAdmin(ComposerAuditedAdmin):
    """Operators manage the request shapes; `Template.clean` validates and normalises the spec."""

    list_display = ("name", "slug", "is_active", "updated_at")
    list_filter = ("is_active",)
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(ServerShape)
class ServerShapeAdmin(ComposerAuditedAdmin):
    """The fixed-ratio server shapes the counterfactual replays onto; `seed_server_shapes`
    adds the machine shapes of Alibaba's PAI trace."""

    list_display = ("name", "gpu_model", "gpus", "cores", "memory_gib", "machines", "source")
    search_fields = ("name", "gpu_model")


@admin.register(Quota)
class QuotaAdmin(ComposerAuditedAdmin):
    list_display = ("tenant", "kind", "model", "max_count", "max_memory_gib", "max_storage_tb")
    list_filter = ("kind", "tenant")
    list_select_related = ("tenant",)


class _ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AllocationInline(_ReadOnlyInline):
    model = Allocation
    fields = ("device", "gib", "state", "binding_id", "bound_at", "released_at")
    readonly_fields = fields


class StateChangeInline(_ReadOnlyInline):
    model = StateChange
    fields = ("at", "from_state", "to_state", "reason", "actor", "source", "remote_addr")
    readonly_fields = fields
    ordering = ("at", "id")


@admin.register(Composition)
class CompositionAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "tenant", "state", "host", "requested_by", "created_at")
    list_filter = ("state", "tenant")
    search_fields = ("name", "failure_reason")
    list_select_related = ("tenant", "host", "requested_by")
    inlines = [AllocationInline, StateChangeInline]
    show_full_result_count = False


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyAdmin):
    list_display = ("id", "composition", "device", "gib", "state", "binding_id", "released_at")
    list_filter = ("state",)
    list_select_related = ("composition", "device")
    show_full_result_count = False


@admin.register(RedfishSession)
class RedfishSessionAdmin(ReadOnlyAdmin):
    """Who holds a Redfish session, from where, last used when. Never the token's digest
    nor the user's session hash; a session is ended by its owner or by an operator over
    Redfish (DELETE of the session), which is audited."""

    list_display = ("public_id", "user", "created_at", "last_used_at", "remote_addr")
    fields = list_display
    list_select_related = ("user",)
    search_fields = ("public_id", "user__username")


@admin.register(KubernetesClaim)
class KubernetesClaimAdmin(ReadOnlyAdmin):
    """The ResourceClaims the Kubernetes controller composed for (docs/kubernetes.md)."""

    list_display = ("uid", "namespace", "name", "node", "composition", "created_at", "released_at")
    list_select_related = ("composition",)
    search_fields = ("uid", "namespace", "name", "node")


@admin.register(KubernetesController)
class KubernetesControllerAdmin(ReadOnlyAdmin):
    """Each controller replica's last pass, as the fabric managers page shows it."""

    list_display = ("identity", "driver", "is_leader", "last_pass_at", "pools", "claims")


@admin.register(UnbindPending)
class UnbindPendingAdmin(ReadOnlyAdmin):
    """Bindings still to undo: written by rollbacks and heals, closed by the reconciler."""

    list_display = ("id", "device", "host", "binding_id", "gib", "attempts", "since", "undone_at")
    list_select_related = ("device", "host")
    search_fields = ("binding_id", "last_error")
    show_full_result_count = False


class ReconcileFindingInline(_ReadOnlyInline):
    model = ReconcileFinding
    fields = (
        *("kind", "outcome", "manager", "device", "host", "composition", "binding_id"),
        *("action", "detail"),
    )
    readonly_fields = fields


@admin.register(ReconcileRun)
class ReconcileRunAdmin(ReadOnlyAdmin):
    """The reconciler's runs (read-only; the Reconcile page starts one)."""

    list_display = ("id", "trigger", "status", "requested_by", "created_at", "finished_at")
    list_filter = ("trigger", "status")
    list_select_related = ("requested_by",)
    inlines = [ReconcileFindingInline]
    show_full_result_count = False


@admin.register(ReconcileFinding)
class ReconcileFindingAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "kind", "outcome", "manager", "device", "binding_id", "at")
    list_filter = ("kind", "outcome")
    list_select_related = ("run", "manager", "device")
    show_full_result_count = False


@admin.register(StateChange)
class StateChangeAdmin(ReadOnlyAdmin):
    list_display = ("at", "composition", "from_state", "to_state", "actor", "remote_addr")
    list_filter = ("to_state",)
    list_select_related = ("composition", "actor")
    show_full_result_count = False


class EventAudienceInline(admin.TabularInline):
    model = EventAudience
    extra = 0
    can_delete = False
    readonly_fields = ("tenant",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    """The event log, read-only: it is the replay source, so nobody edits it by hand."""

    list_display = ("id", "at", "type", "composition", "job", "published_at")
    list_filter = ("type",)
    list_select_related = ("composition", "job")
    inlines = [EventAudienceInline]
    show_full_result_count = False


@admin.register(EventAudience)
class EventAudienceAdmin(ReadOnlyAdmin):
    list_display = ("event", "tenant")
    list_select_related = ("event", "tenant")
    show_full_result_count = False


@admin.register(AlertAudience)
class AlertAudienceAdmin(ReadOnlyAdmin):
    list_display = ("alert", "tenant")
    list_select_related = ("alert", "tenant")
    show_full_result_count = False


@admin.register(ChangeAudience)
class ChangeAudienceAdmin(ReadOnlyAdmin):
    """Which tenant may read which change record (its quotas'); written with the record."""

    list_display = ("record", "tenant")
    list_select_related = ("record", "tenant")
    show_full_result_count = False


@admin.register(Booking)
class BookingAdmin(ReadOnlyAdmin):
    """Bookings are made and cancelled through their services (admission, audit)."""

    list_display = ("id", "name", "tenant", "state", "starts_at", "recurrence", "until")
    list_filter = ("state", "recurrence", "tenant")
    search_fields = ("name",)
    list_select_related = ("tenant",)
    show_full_result_count = False


@admin.register(Occurrence)
class OccurrenceAdmin(ReadOnlyAdmin):
    list_display = ("id", "booking", "starts_at", "ends_at", "state", "host")
    list_filter = ("state",)
    list_select_related = ("booking", "host")
    show_full_result_count = False


@admin.register(BookingHold)
class BookingHoldAdmin(ReadOnlyAdmin):
    list_display = ("id", "occurrence", "device", "starts_at", "ends_at", "gib", "share")
    list_select_related = ("occurrence", "device")
    show_full_result_count = False


# Users (who is an operator): Django's user admin, audited; utilisation samples, and
# notification routes, webhooks, silences and deliveries: read-only. Each in its own module.
import composer.admin_samples  # noqa: E402
import composer.admin_users  # noqa: E402
import composer.notifications.admin  # noqa: E402, F401
