"""Checks of a composition request before anything is written (rule 4): the name is usable
and free, the host exists, the fabric could ever satisfy the request, and the tenant's
quotas allow it. Each failure raises a ComposerError subclass naming the field and, for
quotas, by how much.

The messages are read by whoever asked, tenants included: a request beyond what the fabric
holds is told so without the fabric's totals (its size is the operators' to know; they
read it on the pool pages).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Count, Max, Sum
from django.utils import timezone

from composer.choices import LIVE_COMPOSITION_STATES, CompositionState
from composer.errors import NameTaken, QuotaExceeded, SpecError
from composer.models import Composition, Quota, Tenant
from composer.selectors.bookings import booked_quota_peak
from composer.selectors.quotas import quota_usage
from fabric.choices import ComponentState, DeviceKind, DeviceState
from fabric.kinds import find, measured, shares_per_device
from fabric.models import Device, Host

KIND_LABELS = dict(DeviceKind.choices)

# --- the name -----------------------------------------------------------------------------


def composition_name_clean(name: str | None) -> str:
    """The name without surrounding spaces; SpecError (field `name`) when it is empty or
    longer than the column, never cut short."""
    name = (name or "").strip()
    longest = Composition._meta.get_field("name").max_length or 100
    if not name:
        raise SpecError("Give the composition a name.", field="name")
    if len(name) > longest:
        raise SpecError(
            f"Name is at most {longest} characters; this one has {len(name)}.", field="name"
        )
    return name


def composition_check_name_free(*, tenant: Tenant, name: str) -> None:
    """NameTaken when one of the tenant's live compositions already has `name` (the unique
    index `composer_composition_live_name` is the last word under concurrency)."""
    state = (
        Composition.objects.filter(tenant=tenant, name=name, state__in=LIVE_COMPOSITION_STATES)
        .values_list("state", flat=True)
        .first()
    )
    if state is not None:
        label = CompositionState(state).label.lower()
        raise NameTaken(
            f"{tenant.name} already has a composition named {name} ({label}); choose "
            "another name, or decompose that one first.",
            field="name",
            field_message=f"{tenant.name} already has a composition with this name ({label}).",
        )


# --- validation against the fabric ------------------------------------------------------


def _resolve_host(value: Any) -> Host | None:
    if value is None:
        return None
    hosts = Host.objects.exclude(state=ComponentState.ABSENT)
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        host = hosts.filter(pk=int(value)).first()
        if host is None:
            raise SpecError(f"There is no host with id {value}.", field="host")
        return host
    matches = list(hosts.filter(name=value)[:2])
    if not matches:
        raise SpecError(f"There is no host named {value!r}.", field="host")
    if len(matches) > 1:
        raise SpecError(f"Several hosts are named {value!r}; give its id.", field="host")
    return matches[0]


# Numbers every device has, whatever its manager reports (placement's `DeviceInfo`).
DEVICE_NUMBERS = ("memory_gib", "capacity_gb")


def _check_minima(item: Mapping[str, Any], index: int, label: str) -> None:
    """SpecError naming the first minimum on a number no device of the kind has: placement
    would count every device out and the request would be rejected, not told why."""
    unknown = [name for name in item["minima"] if name not in DEVICE_NUMBERS]
    if not unknown:
        return
    numbers: set[str] = set(DEVICE_NUMBERS)
    present = Device.objects.exclude(state=DeviceState.ABSENT).filter(kind=item["kind"])
    for attributes in present.values_list("attributes", flat=True).iterator():
        # The numbers placement compares (composer.placement.load): ints and floats.
        numbers.update(k for k, v in (attributes or {}).items() if isinstance(v, int | float))
    for name in unknown:
        if name not in numbers:
            raise SpecError(
                f"{label}s have no number {name!r} to set a minimum on; they have: "
                f"{', '.join(sorted(numbers))}.",
                field=f"items[{index}].minima.{name}",
            )


def composition_check_fabric(*, spec: Mapping[str, Any]) -> Host | None:
    """SpecError for what the fabric can never satisfy: unknown models, more devices, GiB,
    TB or cores than exist at all, a host that does not exist. Returns the asked-for host.

    The messages say what was asked and that the fabric will never hold it, not how much it
    holds."""
    present = Device.objects.exclude(state=DeviceState.ABSENT)
    totals = {
        (row["kind"], row["model"]): row
        for row in present.values("kind", "model").annotate(
            n=Count("id"), gib=Sum("memory_gib"), gb=Sum("capacity_gb")
        )
    }
    for index, item in enumerate(spec["items"]):
        kind, model = item["kind"], item["model"]
        label = KIND_LABELS.get(kind, kind)
        of_kind = {m: row["n"] for (k, m), row in totals.items() if k == kind}
        if model is not None and model not in of_kind:
            known = ", ".join(sorted(m for m in of_kind if m)) or "none"
            raise SpecError(
                f"Unknown {label} model {model!r}; the fabric has: {known}.",
                field=f"items[{index}].model",
            )
        _check_minima(item, index, label)
        have = of_kind.get(model, 0) if model is not None else sum(of_kind.values())
        if item["count"] > have:
            what = f"{label}s ({model})" if model else f"{label}s"
            raise SpecError(
                f"More {what} than the fabric holds: {item['count']} asked; ask for fewer.",
                field=f"items[{index}].count",
                field_message="More than the fabric holds; ask for fewer.",
            )
    in_gib, in_gb = measured("gib"), measured("gb")  # what memory_gib and storage_tb draw on
    memory = sum(row["gib"] or 0 for (k, _), row in totals.items() if k == in_gib.name)
    if spec["memory_gib"] > memory:
        raise SpecError(
            f"More {in_gib.amount_of} than the fabric holds: {spec['memory_gib']:,} GiB asked; "
            "ask for less.",
            field="memory_gib",
            field_message="More than the fabric holds; ask for less.",
        )
    storage_tb = sum(row["gb"] or 0 for (k, _), row in totals.items() if k == in_gb.name)
    storage_tb /= 1000
    if spec["storage_tb"] > storage_tb:
        raise SpecError(
            f"More {in_gb.amount_of} than the fabric holds: {spec['storage_tb']:,} TB asked; "
            "ask for less.",
            field="storage_tb",
            field_message="More than the fabric holds; ask for less.",
        )
    host = _resolve_host(spec["host"])
    if spec["cores"]:
        if host is not None:
            most = host.cores
        else:  # one number, not a model instance per host
            hosts = Host.objects.exclude(state=ComponentState.ABSENT)
            most = hosts.aggregate(most=Max("cores"))["most"] or 0
        if spec["cores"] > most:
            raise SpecError(
                f"No host has {spec['cores']} cores; the largest has {most}.", field="cores"
            )
    return host


# --- quotas -------------------------------------------------------------------------------


def _counts(quota: Quota, device: Device) -> bool:
    """Whether `device` counts against `quota` (its kind, and model when the quota has one)."""
    return device.kind == quota.kind and (not quota.model or device.model == quota.model)


def composition_check_quotas(
    *,
    tenant: Tenant,
    spec: Mapping[str, Any],
    pins: Sequence[tuple[Device, int | None]] = (),
    booked: Mapping[int, Mapping[str, float]] | None = None,
    quotas: Sequence[Quota] | None = None,
) -> None:
    """QuotaExceeded naming the quota and the excess when the request does not fit. Named
    devices (`pins`) count as what they are: a whole device of its kind and model, the GiB
    of a memory device (all it has free when none were asked), a drive's capacity.

    Booked windows count too (`booked`: quota id -> figures the tenant's bookings hold
    beside this request). By default, for a composition made now, which has no end: the
    most its bookings hold at once in any occurrence not ended yet."""
    quotas = list(Quota.objects.filter(tenant=tenant)) if quotas is None else list(quotas)
    if not quotas:
        return
    usage = quota_usage(quotas)
    if booked is None:
        booked = booked_quota_peak(quotas, now=timezone.now(), tenant=tenant.pk)
    for quota in quotas:
        extra = booked.get(quota.pk, {})
        used = {name: usage[quota.pk][name] + extra.get(name, 0) for name in usage[quota.pk]}
        declared = find(quota.kind)
        limits = declared.quota if declared else ("count",)
        checks: list[tuple[float | None, float, float, str, str]] = []
        if quota.max_count is not None:
            asked: float = 0
            field = ""
            for index, item in enumerate(spec["items"]):
                if item["kind"] == quota.kind and (not quota.model or item["model"] == quota.model):
                    # A share counts as its fraction of one device (250/1000: 0.25).
                    share = item.get("share")
                    asked += share / shares_per_device(item["kind"]) if share else item["count"]
                    field = field or f"items[{index}].count"
            for index, (device, _) in enumerate(pins):
                if _counts(quota, device) and not device.is_partitionable:
                    asked += 1
                    field = field or f"devices[{index}].device"
            checks.append((quota.max_count, used["count"], asked, "", field))
        if quota.max_memory_gib is not None and "gib" in limits:
            gib = spec["memory_gib"] + sum(
                g or d.free_gib or 0 for d, g in pins if d.kind == quota.kind
            )
            field = "memory_gib" if spec["memory_gib"] or not pins else "devices"
            checks.append((quota.max_memory_gib, used["memory_gib"], gib, " GiB", field))
        if quota.max_storage_tb is not None and "tb" in limits:
            tb = spec["storage_tb"] + sum(
                (d.capacity_gb or 0) / 1000 for d, _ in pins if d.kind == quota.kind
            )
            field = "storage_tb" if spec["storage_tb"] or not pins else "devices"
            checks.append((quota.max_storage_tb, used["storage_tb"], tb, " TB", field))
        for limit, current, asked, unit, field in checks:
            if asked and limit is not None and current + asked > limit:
                raise QuotaExceeded(
                    f"Over the {quota.label} quota of {tenant.name} by "
                    f"{current + asked - limit:g}{unit}: {limit:g}{unit} allowed, "
                    f"{current:g}{unit} in use{' or booked' if any(extra.values()) else ''}, "
                    f"{asked:g}{unit} asked.",
                    field=field,
                )
