"""Factories of the physical world, and `fabric_small()`: a two-switch fabric for tests.

Console tables are normally written by inventory sync; tests that are about pages, the
API or selectors build rows directly with these factories instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import factory
from factory.django import DjangoModelFactory

from fabric.choices import (
    DeviceKind,
    DeviceState,
    EnclosureKind,
    Health,
    PortRole,
    SwitchProtocol,
    SwitchTier,
)
from fabric.models import (
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Pool,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.models.base import DiscoveredModel

M = TypeVar("M", bound=DiscoveredModel)


class FabricManagerFactory(DjangoModelFactory[FabricManager]):
    class Meta:
        model = FabricManager
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"fm-{n}")
    driver = "simulated"
    endpoint = "sim://test"
    settings = factory.LazyFunction(lambda: {"fabric": "test"})


class DiscoveredFactory(DjangoModelFactory[M]):
    class Meta:
        abstract = True

    manager = factory.SubFactory(FabricManagerFactory, name="fm-test")
    external_id = factory.Sequence(lambda n: f"ext-{n}")
    health = Health.OK


class RackFactory(DiscoveredFactory[Rack]):
    class Meta:
        model = Rack

    name = factory.Sequence(lambda n: f"rack-{n}")
    location = "Hall 1"


class PowerFeedFactory(DiscoveredFactory[PowerFeed]):
    class Meta:
        model = PowerFeed

    name = factory.Sequence(lambda n: f"pdu-{n}")
    rack = factory.SubFactory(RackFactory)
    capacity_kw = 17.3


class SwitchFactory(DiscoveredFactory[Switch]):
    class Meta:
        model = Switch

    name = factory.Sequence(lambda n: f"sw-{n}")
    vendor = "XConn"
    model = "XC50256"
    serial = factory.Sequence(lambda n: f"XC{n:08d}")
    protocol = SwitchProtocol.CXL
    tier = SwitchTier.LEAF


class HostFactory(DiscoveredFactory[Host]):
    class Meta:
        model = Host

    name = factory.Sequence(lambda n: f"host-{n:02d}")
    vendor = "Supermicro"
    model = "SYS-421GE"
    serial = factory.Sequence(lambda n: f"S{n:09d}")
    cores = 96
    memory_gib = 768


class EnclosureFactory(DiscoveredFactory[Enclosure]):
    class Meta:
        model = Enclosure

    name = factory.Sequence(lambda n: f"enc-{n:02d}")
    kind = EnclosureKind.GPU_CHASSIS
    vendor = "Liqid"
    model = "EX-4410"
    serial = factory.Sequence(lambda n: f"E{n:09d}")
    slots = 8


class PoolFactory(DjangoModelFactory[Pool]):
    class Meta:
        model = Pool
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Pool {n}")
    slug = factory.Sequence(lambda n: f"pool-{n}")
    kind = DeviceKind.GPU


class DeviceFactory(DiscoveredFactory[Device]):
    class Meta:
        model = Device

    name = factory.Sequence(lambda n: f"gpu-{n:03d}")
    kind = DeviceKind.GPU
    vendor = "NVIDIA"
    model = "H100 SXM"
    serial = factory.Sequence(lambda n: f"1652{n:09d}")
    memory_gib = 80
    state = DeviceState.FREE
    enclosure = factory.SubFactory(EnclosureFactory)


class PortFactory(DiscoveredFactory[Port]):
    class Meta:
        model = Port

    name = factory.Sequence(lambda n: f"p{n}")
    role = PortRole.DOWNSTREAM
    switch = factory.SubFactory(SwitchFactory)


class LinkFactory(DiscoveredFactory[Link]):
    class Meta:
        model = Link

    a_port = factory.SubFactory(PortFactory)
    b_port = factory.SubFactory(PortFactory)
    latency_ns = 250
    bandwidth_gbps = 64.0


@dataclass
class SmallFabric:
    """Two racks (one power feed each), one switch per rack joined by one link, a host and a
    GPU chassis of four GPUs behind each switch, and one CXL memory box in rack A."""

    manager: FabricManager
    racks: list[Rack]
    feeds: list[PowerFeed]
    switches: list[Switch]
    hosts: list[Host]
    enclosures: list[Enclosure]
    gpus: list[Device]
    memory: list[Device]
    links: list[Link] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)


def fabric_small() -> SmallFabric:
    """Build the small fabric in the database (the names are stable for assertions)."""
    manager = FabricManagerFactory.create(name="fm-small", settings={"fabric": "small"})
    racks = [
        RackFactory.create(manager=manager, name=f"rack-{x}", external_id=f"rack-{x}") for x in "ab"
    ]
    feeds = [
        PowerFeedFactory.create(
            manager=manager, name=f"pdu-{r.name[-1]}", external_id=f"pdu-{r.name[-1]}", rack=r
        )
        for r in racks
    ]
    switches, hosts, enclosures, gpus, links = [], [], [], [], []
    gpu_pool = PoolFactory.create(
        name="H100 GPUs", slug="h100", kind=DeviceKind.GPU, model="H100 SXM"
    )
    mem_pool = PoolFactory.create(name="CXL memory", slug="cxl-memory", kind=DeviceKind.CXL_MEMORY)
    for i, (rack, feed) in enumerate(zip(racks, feeds, strict=True)):
        x = rack.name[-1]
        sw = SwitchFactory.create(
            manager=manager, name=f"sw-{x}", external_id=f"sw-{x}", rack=rack, power_feed=feed
        )
        host = HostFactory.create(
            manager=manager, name=f"host-{x}", external_id=f"host-{x}", rack=rack, power_feed=feed
        )
        enc = EnclosureFactory.create(
            manager=manager, name=f"gpu-{x}", external_id=f"gpu-{x}", rack=rack, power_feed=feed
        )
        switches.append(sw)
        hosts.append(host)
        enclosures.append(enc)
        for slot in range(4):
            gpus.append(
                DeviceFactory.create(
                    manager=manager,
                    name=f"gpu-{x}-{slot}",
                    external_id=f"gpu-{x}-{slot}",
                    enclosure=enc,
                    slot=slot,
                    pool=gpu_pool,
                )
            )
        host_port = PortFactory.create(
            manager=manager, switch=None, host=host, role=PortRole.UPLINK, name="up0"
        )
        sw_host_port = PortFactory.create(
            manager=manager, switch=sw, role=PortRole.HOST, name=f"p{i}0"
        )
        links.append(
            LinkFactory.create(
                manager=manager, a_port=sw_host_port, b_port=host_port, latency_ns=120
            )
        )
        enc_port = PortFactory.create(
            manager=manager, switch=None, enclosure=enc, role=PortRole.UPLINK, name="up0"
        )
        sw_enc_port = PortFactory.create(
            manager=manager, switch=sw, role=PortRole.DOWNSTREAM, name=f"p{i}1"
        )
        links.append(
            LinkFactory.create(manager=manager, a_port=sw_enc_port, b_port=enc_port, latency_ns=250)
        )
    isl_a = PortFactory.create(
        manager=manager, switch=switches[0], role=PortRole.FABRIC, name="isl"
    )
    isl_b = PortFactory.create(
        manager=manager, switch=switches[1], role=PortRole.FABRIC, name="isl"
    )
    links.append(LinkFactory.create(manager=manager, a_port=isl_a, b_port=isl_b, latency_ns=300))
    box = EnclosureFactory.create(
        manager=manager,
        name="mem-a",
        external_id="mem-a",
        kind=EnclosureKind.CXL_MEMORY_BOX,
        rack=racks[0],
        power_feed=feeds[0],
        slots=2,
    )
    enclosures.append(box)
    memory = [
        DeviceFactory.create(
            manager=manager,
            name=f"mem-a-{slot}",
            external_id=f"mem-a-{slot}",
            kind=DeviceKind.CXL_MEMORY,
            vendor="Samsung",
            model="CMM-D 1TiB",
            memory_gib=1024,
            enclosure=box,
            slot=slot,
            pool=mem_pool,
        )
        for slot in range(2)
    ]
    return SmallFabric(
        manager=manager,
        racks=racks,
        feeds=feeds,
        switches=switches,
        hosts=hosts,
        enclosures=enclosures,
        gpus=gpus,
        memory=memory,
        links=links,
        pools=[gpu_pool, mem_pool],
    )
