"""FilterSets of the fabric, shared by the HTML pages and the API (one FilterSet, two uses).

`?kind=gpu&state=free&ordering=-memory` means the same on the device table and in
`/api/v1/devices/`; so do the host, enclosure and switch filters on their pages and
endpoints. Multiple-choice filters on the row's own columns say `distinct=False`: no join
can repeat a row, and django-filter's default SELECT DISTINCT over every column (JSON
included) would only slow the COUNT and the page down.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from fabric.choices import (
    ComponentState,
    DeviceKind,
    DeviceState,
    EnclosureKind,
    FailureDomainKind,
    Health,
    LinkState,
    SwitchProtocol,
    SwitchTier,
)
from fabric.forms import MAX_ID
from fabric.models import (
    LINK_END_OWNERS,
    Device,
    Enclosure,
    FabricManager,
    FailureDomain,
    Host,
    Link,
    Pool,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.permissions import is_operator


class EnclosureField(forms.CharField):
    """An enclosure named by its id or its name; an unknown one is a field error."""

    def clean(self, value: Any) -> Enclosure | None:
        text = (super().clean(value) or "").strip()
        if not text:
            return None
        lookup = Q(name__iexact=text)
        if text.isascii() and text.isdigit():
            lookup |= Q(pk=int(text))
        enclosure = Enclosure.objects.filter(lookup).order_by("pk").first()
        if enclosure is None:
            raise forms.ValidationError(f"No enclosure with id or name {text[:60]!r}.")
        return enclosure


@extend_schema_field(OpenApiTypes.STR)
class EnclosureFilter(django_filters.Filter):
    field_class = EnclosureField


@extend_schema_field(OpenApiTypes.INT)
class IdFilter(django_filters.NumberFilter):
    """An object id: a whole number from 1 (NumberFilter alone would take `1.5`)."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


# Filters that reveal where a device sits in the fabric: operators only.
OPERATOR_ONLY_FILTERS = ("enclosure", "rack", "manager")
# Sort keys that would group devices by enclosure (a failure domain): operators only too.
OPERATOR_ONLY_ORDERING = ("enclosure",)


class DeviceFilterSet(django_filters.FilterSet):
    """Kind, model, pool, state, health, enclosure, rack, free text, and ordering.

    Unknown choices and ids make the filter form invalid; the page shows the error and the
    API answers 400 naming the field. Tenant members lose the filters that would reveal
    fabric internals, and free text never searches serial numbers for them.
    """

    # distinct=False: these are columns of the device row, no join can repeat a row, and
    # django-filter's default SELECT DISTINCT over every column (JSON included) makes the
    # COUNT and the page several times slower at 10,000 devices.
    kind = django_filters.MultipleChoiceFilter(choices=DeviceKind.choices, distinct=False)
    model = django_filters.CharFilter(field_name="model", lookup_expr="iexact")
    pool = django_filters.ModelChoiceFilter(
        queryset=Pool.objects.all(), to_field_name="slug", label="Pool"
    )
    state = django_filters.MultipleChoiceFilter(choices=DeviceState.choices, distinct=False)
    health = django_filters.MultipleChoiceFilter(choices=Health.choices, distinct=False)
    # A text field, not a <select>: a large fabric has thousands of enclosures, and a page
    # that lists them all in a drop-down is slow to send and useless to scroll.
    enclosure = EnclosureFilter(field_name="enclosure", label="Enclosure")
    rack = django_filters.ModelChoiceFilter(
        queryset=Rack.objects.all(), field_name="enclosure__rack", label="Rack"
    )
    manager = IdFilter(field_name="manager_id")
    q = django_filters.CharFilter(method="filter_text", label="Search", max_length=100)
    ordering = django_filters.OrderingFilter(
        fields=(
            ("name", "name"),
            ("kind", "kind"),
            ("model", "model"),
            ("state", "state"),
            ("health", "health"),
            ("pool__name", "pool"),
            ("enclosure__name", "enclosure"),
            ("memory_gib", "memory"),
        ),
    )

    class Meta:
        model = Device
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.is_operator = is_operator(getattr(self.request, "user", None))
        if not self.is_operator:
            for name in OPERATOR_ONLY_FILTERS:
                self.filters.pop(name, None)
            # Narrow the sort choices so that `?ordering=enclosure` is invalid (400 in the API)
            # for tenants. The form field is built from `extra` and cached as `_field` (and
            # the cache may have been copied from the class's filter): drop it to rebuild.
            ordering = self.filters["ordering"]
            ordering.extra["choices"] = [
                choice
                for choice in ordering.extra["choices"]
                if choice[0].lstrip("-") not in OPERATOR_ONLY_ORDERING
            ]
            vars(ordering).pop("_field", None)

    def filter_text(self, queryset: QuerySet[Device], name: str, value: str) -> QuerySet[Device]:
        value = value.strip()
        if not value:
            return queryset
        match = Q(name__icontains=value) | Q(model__icontains=value) | Q(vendor__icontains=value)
        if self.is_operator:
            match |= Q(serial__icontains=value) | Q(external_id__iexact=value)
        return queryset.filter(match)


class StrictBooleanField(forms.NullBooleanField):
    """true/false/1/0/yes/no; anything else is an error rather than "no filter".

    Django's NullBooleanField turns unknown words into None, which would silently ignore
    `?is_enabled=banana`; a client deserves to hear that the value was not understood.
    """

    widget = forms.TextInput

    # NullBooleanField's own stub widens BooleanField.to_python's return the same way.
    def to_python(self, value: Any) -> bool | None:  # type: ignore[override]
        if value in (None, ""):
            return None
        word = str(value).strip().lower()
        if word in {"true", "1", "yes"}:
            return True
        if word in {"false", "0", "no"}:
            return False
        raise ValidationError("Expected true or false.", code="invalid")

    def validate(self, value: Any) -> None:
        return None


@extend_schema_field(OpenApiTypes.BOOL)
class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class PoolFilterSet(django_filters.FilterSet):
    """Pools by device kind."""

    kind = django_filters.MultipleChoiceFilter(choices=DeviceKind.choices, distinct=False)

    class Meta:
        model = Pool
        fields: list[str] = []


class DiscoveredFilterSet(django_filters.FilterSet):
    """Filters every discovered thing shares: health, the fabric manager, free text on name."""

    health = django_filters.MultipleChoiceFilter(choices=Health.choices, distinct=False)
    manager = IdFilter(field_name="manager_id")
    q = django_filters.CharFilter(method="filter_text", label="Search", max_length=100)

    # Fields searched by `q`, besides the manager's external id (matched exactly).
    text_fields: tuple[str, ...] = ("name",)

    def filter_text(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        value = value.strip()
        if not value:
            return queryset
        match = Q(external_id__iexact=value)
        for field in self.text_fields:
            match |= Q(**{f"{field}__icontains": value})
        return queryset.filter(match)


def _component_ordering(*extra: tuple[str, str]) -> django_filters.OrderingFilter:
    return django_filters.OrderingFilter(
        fields=(
            ("name", "name"),
            ("model", "model"),
            ("state", "state"),
            ("health", "health"),
            *extra,
        )
    )


class HostFilterSet(DiscoveredFilterSet):
    """Hosts by rack, state, health, manager; free text on name, model and serial."""

    rack = django_filters.ModelChoiceFilter(queryset=Rack.objects.all())
    state = django_filters.MultipleChoiceFilter(choices=ComponentState.choices, distinct=False)
    ordering = _component_ordering(
        ("cores", "cores"), ("memory_gib", "memory"), ("rack__name", "rack")
    )
    text_fields = ("name", "model", "vendor", "serial")

    class Meta:
        model = Host
        fields: list[str] = []


class EnclosureFilterSet(DiscoveredFilterSet):
    """Enclosures by kind, rack, state, health, manager; free text on name, model, serial."""

    kind = django_filters.MultipleChoiceFilter(choices=EnclosureKind.choices, distinct=False)
    rack = django_filters.ModelChoiceFilter(queryset=Rack.objects.all())
    state = django_filters.MultipleChoiceFilter(choices=ComponentState.choices, distinct=False)
    ordering = _component_ordering(("kind", "kind"), ("rack__name", "rack"))
    text_fields = ("name", "model", "vendor", "serial")

    class Meta:
        model = Enclosure
        fields: list[str] = []


class SwitchFilterSet(DiscoveredFilterSet):
    """Switches by protocol, tier, rack, state, health, manager."""

    protocol = django_filters.MultipleChoiceFilter(choices=SwitchProtocol.choices, distinct=False)
    tier = django_filters.MultipleChoiceFilter(choices=SwitchTier.choices, distinct=False)
    rack = django_filters.ModelChoiceFilter(queryset=Rack.objects.all())
    state = django_filters.MultipleChoiceFilter(choices=ComponentState.choices, distinct=False)
    ordering = _component_ordering(("tier", "tier"), ("rack__name", "rack"))
    text_fields = ("name", "model", "vendor", "serial")

    class Meta:
        model = Switch
        fields: list[str] = []


# What a link's two ends belong to: `q` searches their names, `rack` their racks.
_LINK_OWNERS = LINK_END_OWNERS


class LinkFilterSet(DiscoveredFilterSet):
    """Links by state, health, manager, presence, the switch or the rack at either end; free
    text on the names of what either end belongs to, and of their ports."""

    state = django_filters.MultipleChoiceFilter(choices=LinkState.choices, distinct=False)
    is_present = StrictBooleanFilter()
    switch = django_filters.ModelChoiceFilter(
        queryset=Switch.objects.all(), method="filter_switch", label="Switch (either end)"
    )
    rack = django_filters.ModelChoiceFilter(
        queryset=Rack.objects.all(), method="filter_rack", label="Rack (either end)"
    )
    ordering = django_filters.OrderingFilter(
        fields=(
            ("id", "id"),
            ("state", "state"),
            ("health", "health"),
            ("latency_ns", "latency"),
            ("bandwidth_gbps", "bandwidth"),
        )
    )
    text_fields = (
        *(f"{owner}__name" for owner in _LINK_OWNERS),
        "a_port__name",
        "b_port__name",
    )

    class Meta:
        model = Link
        fields: list[str] = []

    def filter_switch(self, queryset: QuerySet[Link], name: str, value: Switch) -> QuerySet[Link]:
        return queryset.filter(Q(a_port__switch=value) | Q(b_port__switch=value))

    def filter_rack(self, queryset: QuerySet[Link], name: str, value: Rack) -> QuerySet[Link]:
        match = Q()
        for owner in _LINK_OWNERS:
            match |= Q(**{f"{owner}__rack": value})
        return queryset.filter(match)


class RackFilterSet(DiscoveredFilterSet):
    """Racks by health and manager; free text on name and location."""

    ordering = django_filters.OrderingFilter(
        fields=(("name", "name"), ("location", "location"), ("health", "health"))
    )
    text_fields = ("name", "location")

    class Meta:
        model = Rack
        fields: list[str] = []


class PowerFeedFilterSet(DiscoveredFilterSet):
    """Power feeds by rack, health and manager."""

    rack = django_filters.ModelChoiceFilter(queryset=Rack.objects.all())
    ordering = django_filters.OrderingFilter(
        fields=(
            ("name", "name"),
            ("health", "health"),
            ("rack__name", "rack"),
            ("capacity_kw", "capacity"),
        )
    )

    class Meta:
        model = PowerFeed
        fields: list[str] = []


class FabricManagerFilterSet(django_filters.FilterSet):
    """Fabric managers by driver and whether they are enabled; free text on the name."""

    driver = django_filters.CharFilter()
    is_enabled = StrictBooleanFilter(label="Enabled")
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", max_length=100)
    ordering = django_filters.OrderingFilter(
        fields=(
            ("name", "name"),
            ("driver", "driver"),
            ("is_enabled", "enabled"),
            ("poll_interval_s", "poll"),
            ("last_synced_at", "last_synced"),
        )
    )

    class Meta:
        model = FabricManager
        fields: list[str] = []


class FailureDomainFilterSet(django_filters.FilterSet):
    """Failure domains by kind and fabric manager; free text on name and key."""

    kind = django_filters.MultipleChoiceFilter(choices=FailureDomainKind.choices, distinct=False)
    manager = IdFilter(field_name="manager_id")
    q = django_filters.CharFilter(method="filter_text", label="Search", max_length=100)
    ordering = django_filters.OrderingFilter(
        fields=(
            ("name", "name"),
            ("kind", "kind"),
            ("device_count", "devices"),
            ("host_count", "hosts"),
            ("devices_degraded_count", "devices_degraded"),
            ("hosts_degraded_count", "hosts_degraded"),
        )
    )

    class Meta:
        model = FailureDomain
        fields: list[str] = []

    def filter_text(
        self, queryset: QuerySet[FailureDomain], name: str, value: str
    ) -> QuerySet[FailureDomain]:
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(Q(name__icontains=value) | Q(key__iexact=value))
