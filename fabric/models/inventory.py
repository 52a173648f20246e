"""Where things stand (racks, power feeds) and what they are (hosts, enclosures, devices, pools)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from fabric.capacity import Split, capacity_split, is_allocatable
from fabric.choices import (
    ComponentState,
    DeviceKind,
    DeviceState,
    EnclosureKind,
)
from fabric.drivers.base import DEFAULT_RACK_HEIGHT_U
from fabric.kinds import DECLARED, is_sliced, shares_per_device
from fabric.models.base import DiscoveredModel, RackMounted, TimeStampedModel


class Rack(DiscoveredModel):
    """A rack: a failure domain (its top-of-rack gear, its floor position)."""

    name = models.CharField(max_length=60)
    location = models.CharField(max_length=120, blank=True)
    height_u = models.PositiveSmallIntegerField(
        default=DEFAULT_RACK_HEIGHT_U,
        help_text="How many rack units (U) tall: the rows of its elevation.",
    )
    is_present = models.BooleanField(
        default=True, help_text="False once discovery stops reporting it."
    )

    class Meta(DiscoveredModel.Meta):
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PowerFeed(DiscoveredModel):
    """A power feed (PDU circuit) that supplies one rack; its loss takes the rack's gear down."""

    name = models.CharField(max_length=60)
    rack = models.ForeignKey(
        Rack, null=True, blank=True, on_delete=models.SET_NULL, related_name="power_feeds"
    )
    capacity_kw = models.FloatField(default=0.0)
    is_present = models.BooleanField(
        default=True, help_text="False once discovery stops reporting it."
    )

    class Meta(DiscoveredModel.Meta):
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Host(RackMounted, DiscoveredModel):
    """A compute node: CPU cores and local memory, with uplink ports into the fabric.

    Compositions are built on a host: devices are bound to it through the fabric.
    """

    name = models.CharField(max_length=100)
    vendor = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=100, blank=True)
    serial = models.CharField(max_length=100, blank=True)
    cores = models.PositiveIntegerField(default=0)
    memory_gib = models.PositiveIntegerField(default=0)
    rack = models.ForeignKey(
        Rack, null=True, blank=True, on_delete=models.SET_NULL, related_name="hosts"
    )
    power_feed = models.ForeignKey(
        PowerFeed, null=True, blank=True, on_delete=models.SET_NULL, related_name="hosts"
    )
    state = models.CharField(
        max_length=16, choices=ComponentState.choices, default=ComponentState.ACTIVE
    )

    class Meta(DiscoveredModel.Meta):
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Enclosure(RackMounted, DiscoveredModel):
    """A box of devices with its own power: GPU chassis, CXL memory box, JBOF, I/O chassis.

    A failure domain: when it fails, every device in it fails with it.
    """

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=EnclosureKind.choices)
    vendor = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=100, blank=True)
    serial = models.CharField(max_length=100, blank=True)
    slots = models.PositiveSmallIntegerField(default=0)
    rack = models.ForeignKey(
        Rack, null=True, blank=True, on_delete=models.SET_NULL, related_name="enclosures"
    )
    power_feed = models.ForeignKey(
        PowerFeed, null=True, blank=True, on_delete=models.SET_NULL, related_name="enclosures"
    )
    state = models.CharField(
        max_length=16, choices=ComponentState.choices, default=ComponentState.ACTIVE
    )

    class Meta(DiscoveredModel.Meta):
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Pool(TimeStampedModel):
    """Devices of one kind (and optionally one model and rack) that tenants draw from.

    Membership is a rule, not a list: synchronisation puts each device in the most specific
    pool whose kind, model and rack match it (see `fabric.services.pools`).
    """

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=DeviceKind.choices)
    model = models.CharField(max_length=100, blank=True, help_text="Blank: any model of the kind.")
    rack = models.ForeignKey(
        Rack,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="pools",
        help_text="Blank: any rack.",
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def _share_constraints() -> list[models.BaseConstraint]:
    """The database's half of rule 1 for shares (the row lock is the other half, in
    `composer.services.allocations.claims`):

    - `allocated_shares` never exceeds the shares its kind declares (`fabric.kinds`, the
      kinds declared here: one never declared has none), so no claim over-allocates a GPU
      even if the Python checks were wrong;
    - `shared_host` is set exactly while shares are held: one column, one host, so every
      live share of a device is on that host, and it is cleared only with the last share;
    - a device holding shares is never FREE, so a whole-device claim (FREE -> RESERVED by
      compare-and-set) never takes it.
    """
    within = Q(allocated_shares=0)
    for declared in DECLARED:
        if declared.partition == "shares":
            within |= Q(kind=declared.name, allocated_shares__lte=declared.shares)
    return [
        models.CheckConstraint(condition=within, name="fabric_device_shares_within_kind"),
        models.CheckConstraint(
            condition=Q(allocated_shares=0, shared_host__isnull=True)
            | Q(allocated_shares__gt=0, shared_host__isnull=False),
            name="fabric_device_shared_host_while_shares",
        ),
        models.CheckConstraint(
            condition=Q(allocated_shares=0) | ~Q(state=DeviceState.FREE),
            name="fabric_device_shared_never_free",
        ),
    ]


class Device(DiscoveredModel):
    """One poolable resource in an enclosure: GPU, CXL memory device, NVMe drive, NIC, DPU, FPGA.

    CXL memory devices are partitionable (`memory_gib` is sliced in GiB, `allocated_gib`
    held by slices); a GPU may be split into shares (`allocated_shares` of its kind's
    `shares` held, all by compositions on `shared_host`); the others are bound whole.
    Lifecycle (`state`): FREE -> RESERVED -> BOUND -> FREE (a memory device: FREE with no
    slice, RESERVED while its slices are only claimed, BOUND once one is bound; a shared
    GPU likewise with its shares); any -> FAILED or MAINTENANCE and back; any -> ABSENT
    when discovery stops reporting it. What it gives its pool: `fabric.capacity`.

    The database holds the shares (see `_share_constraints`): never more than the kind
    declares, a host exactly while some are held, never FREE while some are held.
    """

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=DeviceKind.choices)
    vendor = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=100, blank=True)
    serial = models.CharField(max_length=100, blank=True)
    firmware = models.CharField(max_length=50, blank=True)
    enclosure = models.ForeignKey(
        Enclosure, null=True, blank=True, on_delete=models.SET_NULL, related_name="devices"
    )
    slot = models.PositiveSmallIntegerField(default=0)
    memory_gib = models.PositiveIntegerField(
        default=0, help_text="On-board memory (GPU) or capacity (CXL memory) in GiB."
    )
    capacity_gb = models.PositiveIntegerField(default=0, help_text="Storage capacity (NVMe) in GB.")
    allocated_gib = models.PositiveIntegerField(
        default=0,
        help_text="CXL memory: GiB held by compositions' slices (reserved or bound, or "
        "released with an unbind still pending). Written only by the allocation service, "
        "under the device's row lock; never above memory_gib when a slice is claimed.",
    )
    allocated_shares = models.PositiveIntegerField(
        default=0,
        help_text="A shared GPU: shares (thousandths) held by compositions on shared_host. "
        "Written only by the allocation service, under the device's row lock.",
    )
    shared_host = models.ForeignKey(
        Host,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="shared_devices",
        help_text="The one host whose compositions hold shares of this device, while any do.",
    )
    state = models.CharField(max_length=16, choices=DeviceState.choices, default=DeviceState.FREE)
    pool = models.ForeignKey(
        Pool, null=True, blank=True, on_delete=models.SET_NULL, related_name="devices"
    )
    bound_host = models.ForeignKey(
        Host,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="bound_devices",
        help_text="The host the fabric manager reports this device bound to.",
    )

    class Meta(DiscoveredModel.Meta):
        ordering = ["name"]
        indexes = [
            models.Index(fields=["kind", "state"], name="fabric_device_kind_state"),
            models.Index(fields=["pool", "state"], name="fabric_device_pool_state"),
            models.Index(fields=["model"], name="fabric_device_model"),
            models.Index(fields=["health"], name="fabric_device_health"),
            models.Index(fields=["name"], name="fabric_device_name"),
        ]
        constraints = [*DiscoveredModel.Meta.constraints, *_share_constraints()]

    def __str__(self) -> str:
        return self.name

    @property
    def is_partitionable(self) -> bool:
        """Handed out in GiB slices (CXL memory) rather than whole: its kind's declaration
        (`fabric.kinds`)."""
        return is_sliced(self.kind)

    @property
    def capacity(self) -> Split:
        """What the device gives its pool (one device, or its GiB): `fabric.capacity`."""
        return capacity_split(
            partitionable=self.is_partitionable,
            state=self.state,
            health=self.health,
            memory_gib=self.memory_gib,
            allocated_gib=self.allocated_gib,
            bound=int(self.bound_host_id is not None and not self.allocated_shares),
            shares=self.shares_per_device,
            shared=int(self.allocated_shares > 0),
            allocated_shares=self.allocated_shares,
        )

    @property
    def shares_per_device(self) -> int:
        """How many shares it splits into (its kind's declaration), 0 when taken whole."""
        return shares_per_device(self.kind)

    @property
    def free_shares(self) -> int | None:
        """Shares a composition on `shared_host` may still take (a shared device only)."""
        if not self.allocated_shares:
            return None
        return max(0, self.shares_per_device - self.allocated_shares)

    @property
    def free_gib(self) -> int | None:
        """GiB a new slice may take now (partitionable devices only, else None)."""
        return int(self.capacity.free) if self.is_partitionable else None

    @property
    def is_usable(self) -> bool:
        """The placement engine may consider it: free and not critical; a memory device
        also while its slices are held, as long as GiB are free; a shared GPU while shares are
        free (for its shared host)."""
        return is_allocatable(
            partitionable=self.is_partitionable,
            state=self.state,
            health=self.health,
            free_gib=self.free_gib or 0,
            free_shares=self.free_shares or 0,
        )
