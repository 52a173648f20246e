"""Every fabric list endpoint costs the same number of queries for 2 rows as for many."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabric.choices import DeviceKind, PortRole
from tests.factories.fabric import (
    DeviceFactory,
    EnclosureFactory,
    FabricManagerFactory,
    HostFactory,
    LinkFactory,
    PoolFactory,
    PortFactory,
    PowerFeedFactory,
    RackFactory,
    SwitchFactory,
    fabric_small,
)
from tests.support.api import count_queries, results

pytestmark = pytest.mark.django_db


def _more_devices(fabric: Any, n: int) -> None:
    pool = PoolFactory(slug="more", name="More GPUs", kind=DeviceKind.GPU)
    host = fabric.hosts[0]
    for i in range(n):
        enclosure = EnclosureFactory(
            manager=fabric.manager, rack=RackFactory(manager=fabric.manager)
        )
        DeviceFactory(manager=fabric.manager, enclosure=enclosure, pool=pool, bound_host=host)
        DeviceFactory(
            manager=fabric.manager, kind=DeviceKind.CXL_MEMORY, pool=fabric.pools[1], name=f"m{i}"
        )


def _more_hosts(fabric: Any, n: int) -> None:
    for _ in range(n):
        rack = RackFactory(manager=fabric.manager)
        host = HostFactory(
            manager=fabric.manager,
            rack=rack,
            power_feed=PowerFeedFactory(manager=fabric.manager, rack=rack),
        )
        PortFactory(manager=fabric.manager, switch=None, host=host, role=PortRole.UPLINK)
        PortFactory(manager=fabric.manager, switch=None, host=host, role=PortRole.UPLINK)


def _more_enclosures(fabric: Any, n: int) -> None:
    for _ in range(n):
        rack = RackFactory(manager=fabric.manager)
        enclosure = EnclosureFactory(
            manager=fabric.manager,
            rack=rack,
            power_feed=PowerFeedFactory(manager=fabric.manager, rack=rack),
        )
        PortFactory(manager=fabric.manager, switch=None, enclosure=enclosure, role=PortRole.UPLINK)


def _more_switches(fabric: Any, n: int) -> None:
    for _ in range(n):
        rack = RackFactory(manager=fabric.manager)
        switch = SwitchFactory(
            manager=fabric.manager,
            rack=rack,
            power_feed=PowerFeedFactory(manager=fabric.manager, rack=rack),
        )
        PortFactory(manager=fabric.manager, switch=switch)
        PortFactory(manager=fabric.manager, switch=switch)


def _more_links(fabric: Any, n: int) -> None:
    for _ in range(n):
        host = HostFactory(manager=fabric.manager)
        enclosure = EnclosureFactory(manager=fabric.manager)
        LinkFactory(
            manager=fabric.manager,
            a_port=PortFactory(
                manager=fabric.manager, switch=None, host=host, role=PortRole.UPLINK
            ),
            b_port=PortFactory(
                manager=fabric.manager, switch=None, enclosure=enclosure, role=PortRole.UPLINK
            ),
        )
        LinkFactory(manager=fabric.manager)


def _more_managers(fabric: Any, n: int) -> None:
    for _ in range(n):
        FabricManagerFactory()


def _more_racks(fabric: Any, n: int) -> None:
    for _ in range(n):
        RackFactory(manager=FabricManagerFactory())


def _more_feeds(fabric: Any, n: int) -> None:
    for _ in range(n):
        PowerFeedFactory(manager=FabricManagerFactory())


def _more_pools(fabric: Any, n: int) -> None:
    for i in range(n):
        pool = PoolFactory(slug=f"p{i}", name=f"P{i}", rack=fabric.racks[i % 2])
        DeviceFactory(manager=fabric.manager, pool=pool)


OPERATOR_LISTS: list[tuple[str, Callable[[Any, int], None]]] = [
    ("/api/v1/devices/", _more_devices),
    ("/api/v1/devices/?kind=gpu&state=free&ordering=-memory&pool=more", _more_devices),
    ("/api/v1/pools/", _more_pools),
    ("/api/v1/hosts/", _more_hosts),
    ("/api/v1/enclosures/", _more_enclosures),
    ("/api/v1/switches/", _more_switches),
    ("/api/v1/links/", _more_links),
    ("/api/v1/fabric-managers/", _more_managers),
    ("/api/v1/racks/", _more_racks),
    ("/api/v1/power-feeds/", _more_feeds),
]


@pytest.mark.parametrize(("path", "grow"), OPERATOR_LISTS, ids=[p for p, _ in OPERATOR_LISTS])
def test_operator_list_query_count_does_not_grow_with_rows(
    path: str, grow: Callable[[Any, int], None], api_as: Any, admin_user: Any
) -> None:
    fabric = fabric_small()
    client = api_as(admin_user)
    if "pool=more" in path:
        grow(fabric, 1)
    few = count_queries(lambda: client.get(path))
    grow(fabric, 12)
    many = count_queries(lambda: client.get(path))
    assert many == few


@pytest.mark.parametrize(
    ("path", "grow"),
    [("/api/v1/devices/", _more_devices), ("/api/v1/pools/", _more_pools)],
    ids=["devices", "pools"],
)
def test_tenant_list_query_count_does_not_grow_with_rows(
    path: str, grow: Callable[[Any, int], None], api_as: Any, alice: Any
) -> None:
    fabric = fabric_small()
    client = api_as(alice)
    few = count_queries(lambda: client.get(path))
    grow(fabric, 12)
    many = count_queries(lambda: client.get(path))
    assert many == few


def test_the_device_list_is_a_count_and_a_page(api_as: Any, admin_user: Any) -> None:
    fabric_small()
    # COUNT(*), then one SELECT joined to pool, enclosure, rack, bound host and manager.
    assert count_queries(lambda: api_as(admin_user).get("/api/v1/devices/")) == 2


def test_filtering_by_choices_does_not_select_distinct(api_as: Any, admin_user: Any) -> None:
    """SELECT DISTINCT over every column (JSON included) made the COUNT several times slower."""
    fabric_small()
    with CaptureQueriesContext(connection) as queries:
        response = api_as(admin_user).get(
            "/api/v1/devices/?kind=gpu&kind=nic&state=free&health=ok&health=warning"
        )
    assert response.status_code == 200
    assert not [q["sql"] for q in queries.captured_queries if "DISTINCT" in q["sql"].upper()]


def test_a_page_joins_only_its_own_rows(api_as: Any, admin_user: Any) -> None:
    """The page's ids come from a sliced subquery on the device table; only they are joined."""
    fabric_small()
    with CaptureQueriesContext(connection) as queries:
        rows = results(api_as(admin_user).get("/api/v1/devices/?ordering=-pool&page=2&page_size=3"))
    select = queries.captured_queries[-1]["sql"].upper()
    assert " IN (SELECT" in select and "LIMIT" in select
    assert [row["name"] for row in rows] == ["gpu-a-3", "gpu-b-0", "gpu-b-1"]
