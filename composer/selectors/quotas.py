"""What each tenant holds against its quotas: the figures of the quota list (API), the
dashboard's quota card and the request form's quota panel, and what the request's quota
check enforces (`composer.services.composition_checks`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from composer.choices import ACTIVE_COMPOSITION_STATES
from composer.models import Allocation, Quota, Tenant
from composer.selectors.bookings import booked_quota_peak
from fabric.kinds import QuotaLimit, find, shares_per_device
from fabric.permissions import is_operator

__all__ = [
    "QuotaLine",
    "QuotaUse",
    "TenantQuotas",
    "quota_usage",
    "quota_uses",
    "quotas_by_fullness",
    "quotas_of_member",
    "quotas_of_tenant",
    "tenants_quotas",
]


def quota_usage(quotas: Iterable[Quota]) -> dict[int, dict[str, Any]]:
    """{quota id: {count, memory_gib, storage_tb}} held by the quota's tenant now.

    The one count of quota usage: the quota list shows it and the request's quota check
    (composer.services.composition_checks) enforces it. It is the unreleased allocations of
    the tenant's active compositions. One query for any number
    of quotas. A share of a GPU counts against a device quota as its fraction of one
    (a 250/1000 share: 0.25 GPU).
    """
    quotas = list(quotas)
    if not quotas:
        return {}
    rows = (
        Allocation.objects.filter(
            composition__tenant__in={q.tenant_id for q in quotas},
            composition__state__in=ACTIVE_COMPOSITION_STATES,
            released_at__isnull=True,
        )
        .values("composition__tenant_id", "device__kind", "device__model")
        .annotate(
            whole=Count("id", filter=Q(gib__isnull=True, share__isnull=True)),
            shares=Sum("share"),
            sliced_gib=Sum("gib"),
            whole_gb=Sum("device__capacity_gb", filter=Q(gib__isnull=True)),
        )
    )
    held: dict[tuple[int, str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        tenant, kind = row["composition__tenant_id"], row["device__kind"]
        for key in ((tenant, kind, row["device__model"]), (tenant, kind, "")):
            # A share of a GPU counts as its fraction of one (250 thousandths: 0.25).
            parts = shares_per_device(kind) or 1
            held[key]["count"] += (row["whole"] or 0) + (row["shares"] or 0) / parts
            held[key]["memory_gib"] += row["sliced_gib"] or 0
            held[key]["storage_tb"] += (row["whole_gb"] or 0) / 1000
    usage = {}
    for quota in quotas:
        used = held.get((quota.tenant_id, quota.kind, quota.model), {})
        usage[quota.pk] = {
            "count": _figure(used.get("count", 0)),
            "memory_gib": int(used.get("memory_gib", 0)),
            "storage_tb": round(float(used.get("storage_tb", 0.0)), 3),
        }
    return usage


def _figure(count: float) -> float:
    """A device count as a whole number, or to the thousandth where shares make it a part."""
    return int(count) if count == int(count) else round(count, 3)


# --- what the pages show ------------------------------------------------------------------

# The usage figure (`quota_usage`) each limit is held against.
_USED_BY: dict[QuotaLimit, str] = {"count": "count", "gib": "memory_gib", "tb": "storage_tb"}


@dataclass(frozen=True, slots=True)
class QuotaLine:
    """One limit of a quota and what the tenant holds of it now.

    `measure` says what is counted: devices ("count", a GPU share as its fraction of one),
    GiB of CXL memory ("gib") or TB of NVMe capacity ("tb"). `limit` None: no limit.
    `left` is what a request may still ask for: the request's quota check refuses anything
    past the limit less what is in use, so the pages show exactly that figure.
    """

    kind: str
    measure: QuotaLimit
    limit: float | None
    used: float
    booked: float = 0.0  # the most its bookings hold at once in a window not ended yet

    @property
    def held(self) -> float:
        """In use and booked: what a request made now stands beside (it has no end)."""
        return _figure(self.used + self.booked)

    @property
    def left(self) -> float | None:
        """What may still be asked for now (never below 0); None without a limit."""
        if self.limit is None:
            return None
        return _figure(max(self.limit - self.held, 0))

    @property
    def over(self) -> float:
        """How far use and bookings are past the limit (an operator lowered it below what
        is held), else 0."""
        if self.limit is None or self.held <= self.limit:
            return 0
        return _figure(self.held - self.limit)

    @property
    def used_percent(self) -> float:
        """Use and bookings as a share of the limit, 0 to 100 (100 for a limit of 0)."""
        if self.limit is None:
            return 0.0
        if not self.limit:
            return 100.0
        return min(100.0, 100 * self.held / self.limit)

    @property
    def level(self) -> str:
        """The bar's colour: "full" when nothing is left, "high" from 80 % used, else "ok"."""
        if self.limit is None:
            return "ok"
        if not self.left:
            return "full"
        return "high" if self.used_percent >= 80 else "ok"


@dataclass(frozen=True, slots=True)
class QuotaUse:
    """A quota with a line for each limit it sets (an NVMe quota may limit drives and TB);
    a quota that sets none has one line without a limit."""

    quota: Quota
    lines: tuple[QuotaLine, ...]

    @property
    def fullest(self) -> QuotaLine:
        """The line closest to its limit (the operators' summary shows it)."""
        return max(self.lines, key=lambda line: line.used_percent)


@dataclass(frozen=True, slots=True)
class TenantQuotas:
    """One tenant's quotas with their use; no quotas: nothing limits what it may ask for."""

    tenant: Tenant
    quotas: tuple[QuotaUse, ...]

    @property
    def fullest(self) -> QuotaUse | None:
        """The quota closest to its limit, or None without quotas."""
        if not self.quotas:
            return None
        return max(self.quotas, key=lambda use: use.fullest.used_percent)


def _lines(
    quota: Quota, used: dict[str, Any], booked: dict[str, float] | None = None
) -> tuple[QuotaLine, ...]:
    """The limits the request's quota check holds `quota` to, in the same terms: a device
    count whenever one is set, GiB and TB only on the kinds that take them."""
    declared = find(quota.kind)
    takes = declared.quota if declared else ("count",)
    limits: list[tuple[QuotaLimit, float | None]] = []
    if quota.max_count is not None:
        limits.append(("count", quota.max_count))
    if quota.max_memory_gib is not None and "gib" in takes:
        limits.append(("gib", quota.max_memory_gib))
    if quota.max_storage_tb is not None and "tb" in takes:
        limits.append(("tb", quota.max_storage_tb))
    if not limits:
        limits.append((takes[0] if takes else "count", None))
    booked = booked or {}
    return tuple(
        QuotaLine(
            quota.kind,
            measure,
            limit,
            used[_USED_BY[measure]],
            _figure(booked.get(_USED_BY[measure], 0.0)),
        )
        for measure, limit in limits
    )


def quota_uses(quotas: Iterable[Quota]) -> list[QuotaUse]:
    """Each quota with its lines, in the order given, what is in use and what is booked
    ahead counted as the request's quota check counts them (`booked_quota_peak`); five
    queries at most for any number of quotas and tenants."""
    quotas = list(quotas)
    usage = quota_usage(quotas)
    booked = booked_quota_peak(quotas, now=timezone.now())  # each quota its own tenant's
    return [
        QuotaUse(quota, _lines(quota, usage[quota.pk], booked.get(quota.pk))) for quota in quotas
    ]


def tenants_quotas(tenants: Sequence[Tenant]) -> list[TenantQuotas]:
    """Each of `tenants`, in the order given, with its quotas and their use. The caller
    picks the tenants the viewer may see; two queries however many tenants and quotas."""
    if not tenants:
        return []
    quotas = Quota.objects.filter(tenant__in=[t.pk for t in tenants]).order_by(
        "tenant_id", "kind", "model", "pk"
    )
    by_tenant: dict[int, list[QuotaUse]] = defaultdict(list)
    for use in quota_uses(quotas):
        by_tenant[use.quota.tenant_id].append(use)
    return [TenantQuotas(tenant, tuple(by_tenant.get(tenant.pk, ()))) for tenant in tenants]


def _visible_tenants(user: Any) -> QuerySet[Tenant]:
    """Every tenant for operators, else those `user` belongs to (in any role: a read-only
    member reads its quotas too), by name."""
    tenants = Tenant.objects.order_by("name")
    if is_operator(user):
        return tenants
    if not user.is_authenticated:
        return tenants.none()
    return tenants.filter(memberships__user=user)


def quotas_of_member(user: Any) -> list[TenantQuotas]:
    """The tenants `user` is a member of, by name, each with its quotas (the dashboard's
    quota card); never another tenant's."""
    if not user.is_authenticated:
        return []
    return tenants_quotas(list(Tenant.objects.filter(memberships__user=user).order_by("name")))


def quotas_of_tenant(user: Any, tenant_id: int) -> TenantQuotas | None:
    """One tenant's quotas (the request form's panel), or None when `user` may not see that
    tenant (an outsider learns nothing, not even that it exists)."""
    tenant = _visible_tenants(user).filter(pk=tenant_id).first()
    return tenants_quotas([tenant])[0] if tenant is not None else None


def quotas_by_fullness() -> list[TenantQuotas]:
    """Every tenant that has quotas, the one whose quota is closest to its limit first (the
    operators' summary); three queries however many tenants and quotas."""
    tenants = list(Tenant.objects.filter(pk__in=Quota.objects.values("tenant")).order_by("name"))
    summary = tenants_quotas(tenants)
    summary.sort(key=lambda t: -(t.fullest.fullest.used_percent if t.fullest else 0))
    return summary
