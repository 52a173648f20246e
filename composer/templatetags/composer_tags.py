"""Template tags of the console: status and health badges, sizes, percentages, durations."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django import template
from django.http import QueryDict
from django.utils import timezone
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from composer.choices import CompositionState, JobStatus
from composer.services.holds import hold_words
from fabric.choices import ComponentState, DeviceState, Health, LinkState
from fabric.kinds import find
from fabric.secrets import MASK, is_secret_key, mask_endpoint, mask_secrets

register = template.Library()

# One colour per value; the enumerations agree where they share a value ("failed",
# "maintenance"), so a single table serves device, component, link and job states.
_STATUS_STYLE: dict[str, tuple[str, str]] = {
    # value: (Bootstrap colour, Bootstrap icon)
    DeviceState.FREE: ("success", "circle"),
    DeviceState.RESERVED: ("info", "hourglass-split"),
    DeviceState.BOUND: ("primary", "link-45deg"),
    DeviceState.FAILED: ("danger", "x-octagon"),
    DeviceState.MAINTENANCE: ("warning", "tools"),
    DeviceState.ABSENT: ("secondary", "question-circle"),
    ComponentState.ACTIVE: ("success", "check-circle"),
    LinkState.UP: ("success", "arrow-up-circle"),
    LinkState.DEGRADED: ("warning", "exclamation-triangle"),
    LinkState.DOWN: ("danger", "arrow-down-circle"),
    JobStatus.QUEUED: ("secondary", "clock"),
    JobStatus.RUNNING: ("primary", "arrow-repeat"),
    JobStatus.SUCCEEDED: ("success", "check-circle"),
    JobStatus.CANCELLED: ("dark", "slash-circle"),
}
_HEALTH_STYLE: dict[str, tuple[str, str]] = {
    Health.OK: ("success", "check-circle-fill"),
    Health.WARNING: ("warning", "exclamation-triangle-fill"),
    Health.CRITICAL: ("danger", "x-octagon-fill"),
    Health.UNKNOWN: ("secondary", "question-circle-fill"),
}
_LABELS: dict[str, str] = {
    **dict(JobStatus.choices),
    **dict(LinkState.choices),
    **dict(ComponentState.choices),
    **dict(DeviceState.choices),
}


def badge(colour: str, icon: str, label: str, *, data: tuple[str, str] | None = None) -> SafeString:
    """The one status badge of the console; `data` ("state", value) becomes a `data-state`
    attribute that scripts and browser tests read."""
    attribute = format_html(' data-{}="{}"', *data) if data else ""
    return format_html(
        '<span class="badge badge-status text-bg-{}"{}>'
        '<i class="bi bi-{}" aria-hidden="true"></i> {}</span>',
        colour,
        attribute,
        icon,
        label,
    )


@register.filter
def status_badge(value: str) -> SafeString:
    """A coloured badge for a device, component, link or job state."""
    colour, icon = _STATUS_STYLE.get(str(value), ("secondary", "dot"))
    return badge(colour, icon, _LABELS.get(str(value), str(value) or "—"))


@register.filter
def health_badge(value: str) -> SafeString:
    """A coloured badge for a health value (ok, warning, critical, unknown)."""
    colour, icon = _HEALTH_STYLE.get(str(value), _HEALTH_STYLE[Health.UNKNOWN])
    return badge(colour, icon, dict(Health.choices).get(str(value), str(value) or "Unknown"))


@register.filter
def health_colour(value: str) -> str:
    """The Bootstrap colour name of a health value, for borders and text."""
    return _HEALTH_STYLE.get(str(value), _HEALTH_STYLE[Health.UNKNOWN])[0]


def _number(value: float) -> str:
    """At most two decimals, trailing zeros dropped, always a dot (never locale-formatted)."""
    text = f"{value:,.2f}".rstrip("0").rstrip(".")
    return text or "0"


@register.filter
def gib(value: Any) -> str:
    """Binary memory sizes from GiB: 80 -> "80 GiB", 1536 -> "1.5 TiB"."""
    try:
        amount = float(value)
    except (TypeError, ValueError):
        return "—"
    if abs(amount) >= 1024:
        return f"{_number(amount / 1024)} TiB"
    return f"{_number(amount)} GiB"


@register.filter
def gb(value: Any) -> str:
    """Decimal storage sizes from GB: 960 -> "960 GB", 7680 -> "7.68 TB"."""
    try:
        amount = float(value)
    except (TypeError, ValueError):
        return "—"
    if abs(amount) >= 1000:
        return f"{_number(amount / 1000)} TB"
    return f"{_number(amount)} GB"


@register.filter
def tb(value: Any) -> str:
    """A decimal size in GB shown in TB whatever its size: 960 -> "0.96 TB"."""
    try:
        return f"{_number(float(value) / 1000)} TB"
    except (TypeError, ValueError):
        return "—"


@register.filter
def gbps(value: Any) -> str:
    """A bandwidth in GB/s."""
    try:
        return f"{_number(float(value))} GB/s"
    except (TypeError, ValueError):
        return "—"


@register.filter
def device_size(device: Any) -> str:
    """What a device offers, in its own unit (its kind's `size`): GPU and CXL memory in GiB,
    NVMe in GB/TB."""
    size = declared.size if (declared := find(device.kind)) else ""
    if size == "memory_gib":
        return gib(device.memory_gib) if device.memory_gib else "—"
    if size == "capacity_gb":
        return gb(device.capacity_gb) if device.capacity_gb else "—"
    if device.memory_gib:
        return gib(device.memory_gib)
    return "—"


@register.filter
def slice_use(device: Any) -> str:
    """How much of a partitionable device its slices hold: "1.25 TiB allocated, 768 GiB
    free", "all 2 TiB allocated", "none allocated"; "" for a device bound whole. The
    figures are the pools' (`fabric.capacity`): GiB that are not held on a device out of
    service are not free."""
    if not getattr(device, "is_partitionable", False):
        return ""
    split = device.capacity
    if not split.allocated:
        return "none allocated"
    if split.allocated >= split.capacity:
        return f"all {gib(split.capacity)} allocated"
    if not split.free:
        return f"{gib(split.allocated)} allocated"
    return f"{gib(split.allocated)} allocated, {gib(split.free)} free"


@register.filter
def figure(value: Any) -> str:
    """A figure with at most two decimals and thousands separators: 4.5, 2,048, 0.25."""
    try:
        return _number(float(value))
    except (TypeError, ValueError):
        return "—"


@register.filter
def percent(value: Any, total: Any = 100) -> str:
    """`value` as a share of `total`, one decimal: {{ used|percent:capacity }} -> "42.5%"."""
    try:
        part, whole = float(value), float(total)
    except (TypeError, ValueError):
        return "—"
    if not whole:
        return "0%"
    return f"{_number(round(100 * part / whole, 1))}%"


@register.filter
def css_percent(value: Any) -> str:
    """A width for a progress bar: a percentage clamped to 0-100 with a dot as separator."""
    try:
        amount = max(0.0, min(100.0, float(value)))
    except (TypeError, ValueError):
        amount = 0.0
    return f"{amount:.2f}%"


@register.filter
def duration(value: Any) -> str:
    """Seconds (or a timedelta) as "2 h 5 min", "3 min 4 s", "1.2 s"."""
    if value is None or value == "":
        return "—"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 10:
        return f"{seconds:.1f} s"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


@register.filter
def change_value(value: Any) -> str:
    """One side of a recorded change, short: blanks shown as an em dash."""
    if value is None or value == "":
        return "—"
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "…"


@register.filter
def nav_section(request: Any) -> str:
    """The navbar entry of the current page: "device" for fabric:device_detail, and so on."""
    match = getattr(request, "resolver_match", None)
    if match is None or not match.url_name:
        return ""
    return str(match.url_name).split("_")[0]


@register.filter
def elided_pages(page: Any) -> list[Any]:
    """Page numbers around the current one, with `Paginator.ELLIPSIS` for the gaps."""
    return list(page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1))


@register.filter
def change_rows(changes: Any) -> list[tuple[str, Any, Any]]:
    """A ChangeRecord's `changes` ({field: [before, after]}) as rows, secrets masked."""
    if not isinstance(changes, dict):
        return [("", None, mask_secrets(changes))] if changes else []
    rows = []
    for key, pair in changes.items():
        before, after = pair if isinstance(pair, list | tuple) and len(pair) == 2 else (None, pair)
        if is_secret_key(str(key)):
            before, after = (MASK if before else before), (MASK if after else after)
        elif key == "endpoint":
            before, after = (masked_endpoint(v) for v in (before, after))
        rows.append((str(key), mask_secrets(before), mask_secrets(after)))
    return rows


@register.filter
def masked_endpoint(endpoint: Any) -> Any:
    """A fabric manager's endpoint with any password or token in it masked."""
    return mask_endpoint(endpoint) if isinstance(endpoint, str) and endpoint else endpoint


@register.simple_tag(takes_context=True)
def page_query(context: template.Context, param: str, number: Any) -> str:
    """The current query string with `param` set to `number` (other parameters kept)."""
    request = context.get("request")
    query = request.GET.copy() if request is not None else QueryDict(mutable=True)
    query[param] = str(number)
    return "?" + query.urlencode()


@register.filter
def job_duration(job: Any) -> str:
    """How long a job ran, or has been running so far; "—" before it starts."""
    if not job.started_at:
        return "—"
    end = job.finished_at or timezone.now()
    return duration(max(0.0, (end - job.started_at).total_seconds()))


_COMPOSITION_STYLE: dict[str, tuple[str, str]] = {
    CompositionState.REQUESTED: ("secondary", "clock"),
    CompositionState.PLACING: ("info", "signpost-split"),
    CompositionState.HELD: ("info", "hourglass-split"),
    CompositionState.BINDING: ("primary", "arrow-repeat"),
    CompositionState.READY: ("success", "check-circle"),
    CompositionState.DEGRADED: ("warning", "exclamation-triangle"),
    CompositionState.HEALING: ("info", "bandaid"),
    CompositionState.RESIZING: ("primary", "arrows-angle-expand"),
    CompositionState.DECOMPOSING: ("warning", "box-arrow-up"),
    CompositionState.RELEASED: ("dark", "archive"),
    CompositionState.FAILED: ("danger", "x-octagon"),
    CompositionState.REJECTED: ("danger", "slash-circle"),
}


@register.filter
def hold_expiry(value: datetime | None) -> str:
    """A hold's end as the composition page says it: "Held until 12:34 UTC; applies or
    lapses" ("" without one)."""
    return hold_words(value) if value else ""


@register.filter
def composition_badge(value: str) -> SafeString:
    """A coloured badge for a composition state."""
    colour, icon = _COMPOSITION_STYLE.get(str(value), ("secondary", "dot"))
    label = dict(CompositionState.choices).get(str(value), str(value) or "—")
    return badge(colour, icon, label, data=("state", str(value)))


@register.filter
def subtract(value: Any, other: Any) -> Any:
    """`value` minus `other` (funnel rows: how many candidates a constraint removed)."""
    try:
        return value - other
    except TypeError:
        return ""


@register.filter
def mark_match(value: Any, text: str) -> SafeString:
    """`value`, escaped, with every occurrence of `text` (any case) in <mark>: where a search
    result matched."""
    value = "" if value is None else str(value)
    if not text:
        return conditional_escape(value)
    parts: list[str] = []
    last = 0
    for match in re.finditer(re.escape(text), value, flags=re.IGNORECASE):
        parts.append(conditional_escape(value[last : match.start()]))
        parts.append(format_html("<mark>{}</mark>", match.group(0)))
        last = match.end()
    parts.append(conditional_escape(value[last:]))
    # Every part is escaped above: the only markup is ours.
    return mark_safe("".join(parts))


@register.filter
def quota_number(value: Any) -> str:
    """A figure of a quota without its unit: thousands separated, up to three decimals (a
    GPU share is counted in thousandths of one): 1.25, 2,048, 0.16."""
    try:
        amount = float(value)
    except (TypeError, ValueError):
        return "—"
    return f"{amount:,.3f}".rstrip("0").rstrip(".") or "0"


@register.filter
def quota_unit(line: Any) -> str:
    """The unit a quota line (`composer.selectors.quotas.QuotaLine`) counts in: the kind's
    plural for devices ("GPUs", "NVMe drives"), "GiB", "TB"."""
    if line.measure in ("gib", "tb"):
        return "GiB" if line.measure == "gib" else "TB"
    declared = find(line.kind)
    return declared.plural if declared else "devices"


@register.filter
def quota_amount(value: Any, line: Any) -> str:
    """An amount of a quota line in its unit, for sentences: "2.25 GPUs", "1 GPU",
    "1.5 TiB", "3.84 TB"."""
    number = quota_number(value)
    if number == "—":
        return number
    if line.measure == "gib":
        return gib(value)
    if line.measure == "count" and number == "1":
        declared = find(line.kind)
        return f"1 {declared.label if declared else 'device'}"
    return f"{number} {quota_unit(line)}"
