"""The device table and the device page, for every persona."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from fabric.choices import ChangeAction, DeviceKind, DeviceState, Health, LinkState
from fabric.models import ChangeRecord, Device
from tests.factories.fabric import (
    DeviceFactory,
    EnclosureFactory,
    HostFactory,
    PoolFactory,
    RackFactory,
    SmallFabric,
)
from tests.support.personas import PERSONAS, TENANTS

pytestmark = pytest.mark.django_db

DEVICES = reverse("fabric:device_list")


def _names(response: Any) -> set[str]:
    return {d.name for d in response.context["page"]}


# --- the table ------------------------------------------------------------------------------


@pytest.mark.parametrize("who", PERSONAS)
def test_every_persona_sees_the_device_table(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).get(DEVICES)
    assert response.status_code == 200
    assert _names(response) == {d.name for d in small.gpus + small.memory}
    body = response.content.decode()
    assert "gpu-a-0" in body
    assert "H100 GPUs" in body


@pytest.mark.parametrize("who", ["admin_user", "alice"])
def test_an_empty_table_says_that_no_device_matches_the_filters_and_how_many_there_are(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).get(
        DEVICES, {"kind": ["cxl_memory", "fpga"], "state": "failed", "q": "mem"}
    )
    assert response.status_code == 200
    body = " ".join(response.content.decode().split())
    assert 'id="device-count">No devices<' in body
    assert "No devices match these filters" in body
    assert "(Kind: CXL memory, FPGA; State: Failed; Search: “mem”)" in body
    assert f"{Device.objects.count()} devices in all" in body
    assert f'href="{DEVICES}">Clear the filters' in body


def test_an_empty_fabric_says_so(
    db: None, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(admin_user).get(DEVICES).content.decode()
    assert "No devices yet: an inventory sync of a fabric manager adds them." in body


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_never_see_serials_enclosures_or_hosts_in_the_table(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    small.gpus[0].bound_host = small.hosts[0]
    small.gpus[0].save()
    body = client_as(persona(who)).get(DEVICES).content.decode()
    for device in small.gpus + small.memory:
        assert device.serial not in body
    assert "Serial" not in body
    assert "Bound host" not in body
    assert reverse("fabric:enclosure_detail", args=[small.enclosures[0].pk]) not in body
    assert reverse("fabric:host_detail", args=[small.hosts[0].pk]) not in body
    assert "rack-a" not in body


def test_operators_see_serial_enclosure_rack_and_bound_host(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    gpu = small.gpus[0]
    gpu.bound_host = small.hosts[0]
    gpu.state = DeviceState.BOUND
    gpu.save()
    body = client_as(admin_user).get(DEVICES).content.decode()
    assert gpu.serial in body
    assert reverse("fabric:enclosure_detail", args=[gpu.enclosure_id]) in body
    assert reverse("fabric:host_detail", args=[small.hosts[0].pk]) in body
    assert "rack-a" in body


def test_memory_and_capacity_are_shown_in_their_units(
    small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    DeviceFactory(
        name="nvme-0", kind=DeviceKind.NVME, memory_gib=0, capacity_gb=7680, model="PM1743"
    )
    body = client_as(alice).get(DEVICES).content.decode()
    assert "80 GiB" in body
    assert "1 TiB" in body  # 1024 GiB of CXL memory
    assert "7.68 TB" in body


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"kind": "cxl_memory"}, {"mem-a-0", "mem-a-1"}),
        ({"kind": ["cxl_memory", "gpu"]}, None),
        ({"pool": "h100"}, {f"gpu-{x}-{i}" for x in "ab" for i in range(4)}),
        ({"model": "h100 sxm"}, {f"gpu-{x}-{i}" for x in "ab" for i in range(4)}),
        ({"q": "gpu-b"}, {f"gpu-b-{i}" for i in range(4)}),
        ({"state": "failed"}, {"gpu-a-1"}),
        ({"health": "critical"}, {"gpu-a-1"}),
        ({"kind": "gpu", "state": "free", "q": "gpu-a"}, {"gpu-a-0", "gpu-a-2", "gpu-a-3"}),
        ({"pool": "h100", "health": "ok", "q": "-b-"}, {f"gpu-b-{i}" for i in range(4)}),
    ],
)
def test_filters_work_and_combine(
    query: dict[str, Any],
    expected: set[str] | None,
    small: SmallFabric,
    alice: Any,
    client_as: Callable[[Any], Client],
) -> None:
    Device.objects.filter(name="gpu-a-1").update(state=DeviceState.FAILED, health=Health.CRITICAL)
    response = client_as(alice).get(DEVICES, query)
    assert response.status_code == 200
    if expected is None:
        expected = {d.name for d in small.gpus + small.memory}
    assert _names(response) == expected


def test_operators_filter_by_enclosure_and_rack(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    by_enclosure = client.get(DEVICES, {"enclosure": small.enclosures[1].pk})
    assert _names(by_enclosure) == {f"gpu-b-{i}" for i in range(4)}
    by_enclosure_name = client.get(DEVICES, {"enclosure": small.enclosures[1].name.upper()})
    assert _names(by_enclosure_name) == {f"gpu-b-{i}" for i in range(4)}
    rack_query: dict[str, int | str] = {"rack": small.racks[0].pk, "kind": "cxl_memory"}
    by_rack = client.get(DEVICES, rack_query)
    assert _names(by_rack) == {"mem-a-0", "mem-a-1"}


def test_tenant_members_cannot_filter_by_enclosure(
    small: SmallFabric, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(carol).get(DEVICES, {"enclosure": small.enclosures[1].pk})
    # The filter does not exist for them: ignored, every device listed, no enclosure select.
    assert response.status_code == 200
    assert len(_names(response)) == 10
    assert 'name="enclosure"' not in response.content.decode()


@pytest.mark.parametrize(
    ("query", "field_error"),
    [
        ({"kind": "banana"}, "banana is not one of the available choices"),
        ({"state": "melted"}, "melted is not one of the available choices"),
        ({"health": "meh"}, "meh is not one of the available choices"),
        ({"pool": "nope"}, "Select a valid choice"),
        ({"enclosure": "abc"}, "No enclosure with id or name"),
        ({"enclosure": "999999"}, "No enclosure with id or name"),
        ({"rack": "999999"}, "Select a valid choice"),
        ({"ordering": "serial"}, "Select a valid choice"),
        ({"q": "x" * 101}, "at most 100 characters"),
        ({"per_page": "7"}, "per_page must be one of 25, 50, 100, 200"),
    ],
)
def test_unknown_filter_values_answer_400_with_the_error_shown(
    query: dict[str, str],
    field_error: str,
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(admin_user).get(DEVICES, query)
    assert response.status_code == 400
    body = response.content.decode()
    assert field_error in body
    assert "These filters cannot be applied" in body
    assert response.context["page"] is None


def test_the_field_error_is_drawn_beside_its_field(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(admin_user).get(DEVICES, {"kind": "banana"}).content.decode()
    slot = body.split('id="filter-error-kind"', 1)[1].split("</div>", 1)[0]
    assert "banana is not one of the available choices" in slot


def test_tenants_may_not_sort_by_enclosure(
    small: SmallFabric, bob: Any, client_as: Callable[[Any], Client]
) -> None:
    assert client_as(bob).get(DEVICES, {"ordering": "enclosure"}).status_code == 400


@pytest.mark.parametrize(
    ("page", "status", "message"),
    [
        ("999", 404, "Page 999 does not exist"),
        ("abc", 400, "is not a page number"),
        ("0", 400, "pages start at 1"),
        ("-3", 400, "pages start at 1"),
    ],
)
def test_bad_page_numbers_are_400_or_404_with_a_message(
    page: str,
    status: int,
    message: str,
    small: SmallFabric,
    alice: Any,
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(alice).get(DEVICES, {"page": page})
    assert response.status_code == status
    assert message in response.content.decode()


def test_pages_hold_50_rows_and_the_page_size_can_change(
    db: None, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    enclosure = EnclosureFactory()
    DeviceFactory.create_batch(120, enclosure=enclosure)
    client = client_as(admin_user)
    first = client.get(DEVICES)
    assert len(first.context["page"].object_list) == 50
    assert first.context["page"].paginator.num_pages == 3
    third = client.get(DEVICES, {"page": 3})
    assert len(third.context["page"].object_list) == 20
    wide = client.get(DEVICES, {"per_page": 100, "page": 2})
    assert len(wide.context["page"].object_list) == 20
    # Pages neither repeat nor skip rows.
    seen = [d.pk for n in (1, 2, 3) for d in client.get(DEVICES, {"page": n}).context["page"]]
    assert len(seen) == len(set(seen)) == 120


def test_sorting_by_a_column_and_back(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    ascending = [d.name for d in client.get(DEVICES, {"ordering": "memory"}).context["page"]]
    assert ascending[0].startswith("gpu-")
    assert ascending[-1].startswith("mem-")
    response = client.get(DEVICES, {"ordering": "-memory"})
    descending = [d.name for d in response.context["page"]]
    assert descending[0].startswith("mem-")
    body = response.content.decode()
    # The header of the sorted column links to the opposite order; the others to ascending.
    assert "?ordering=memory" in body
    assert "?ordering=name" in body
    assert 'aria-sort="descending"' in body


def test_htmx_gets_just_the_table_and_the_filter_bar_updates(
    small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(
        DEVICES,
        {"kind": "banana"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="device-table",
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "<html" not in body
    assert body.lstrip().startswith('<div id="device-table"')
    assert 'id="filter-error-kind" hx-swap-oob="true">' in body
    assert "banana" in body
    assert "HX-Request" in response["Vary"]
    ok = client_as(alice).get(
        DEVICES, {"q": "mem"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="device-table"
    )
    assert ok.status_code == 200
    assert _names(ok) == {"mem-a-0", "mem-a-1"}


def test_a_history_restore_gets_the_whole_page(
    small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(
        DEVICES,
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="device-table",
        HTTP_HX_HISTORY_RESTORE_REQUEST="true",
    )
    assert "<html" in response.content.decode()


def _more_devices(n: int) -> None:
    manager = Device.objects.first().manager
    pool = PoolFactory(slug=f"extra-{n}", name=f"Extra {n}")
    host = HostFactory(manager=manager)
    for i in range(n):
        enclosure = EnclosureFactory(manager=manager, rack=RackFactory(manager=manager))
        DeviceFactory(
            manager=manager,
            enclosure=enclosure,
            pool=pool,
            bound_host=host if i % 2 else None,
            state=DeviceState.BOUND if i % 2 else DeviceState.FREE,
        )


@pytest.mark.parametrize("who", ["admin_user", "carol"])
def test_the_table_costs_the_same_queries_for_10_and_60_devices(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    client = client_as(persona(who))
    client.get(DEVICES)  # warm the session
    with CaptureQueriesContext(connection) as ten:
        assert client.get(DEVICES, {"per_page": 100}).status_code == 200
    _more_devices(50)
    assert Device.objects.count() == 60
    with CaptureQueriesContext(connection) as sixty:
        response = client.get(DEVICES, {"per_page": 100})
    assert response.status_code == 200
    assert len(response.context["page"].object_list) == 60
    assert len(sixty.captured_queries) == len(ten.captured_queries), "\n".join(
        q["sql"] for q in sixty.captured_queries
    )


# --- the device page ------------------------------------------------------------------------


def _history(device: Device, n: int) -> None:
    for i in range(n):
        ChangeRecord.objects.create(
            target_type="device",
            target_id=device.pk,
            target_label=device.name,
            action=ChangeAction.CHANGED,
            changes={"health": ["ok", f"warning-{i}"]},
            source=f"sync job {i}",
        )


def test_operators_see_everything_about_a_device(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    gpu = small.gpus[0]
    gpu.firmware = "96.00.89.00.01"
    gpu.save()
    _history(gpu, 3)
    response = client_as(admin_user).get(reverse("fabric:device_detail", args=[gpu.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    for text in (gpu.serial, gpu.firmware, gpu.external_id, "fm-small", "gpu-a", "rack-a", "pdu-a"):
        assert text in body
    assert "GPU memory" in body and "80 GiB" in body
    # The enclosure's uplink: to switch sw-a, 250 ns, 64 GB/s, up.
    uplinks = body.split('id="uplinks"', 1)[1].split('id="history"', 1)[0]
    assert "sw-a" in uplinks and "250 ns" in uplinks and "64 GB/s" in uplinks and "Up" in uplinks
    assert "warning-2" in body
    # Newest first.
    assert body.index("warning-2") < body.index("warning-0")


def test_the_device_history_is_paginated(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    gpu = small.gpus[0]
    _history(gpu, 25)
    client = client_as(admin_user)
    url = reverse("fabric:device_detail", args=[gpu.pk])
    first = client.get(url)
    assert len(first.context["history"].object_list) == 20
    assert "warning-24" in first.content.decode()
    second = client.get(url, {"history_page": 2})
    assert "warning-0" in second.content.decode()
    assert client.get(url, {"history_page": 9}).status_code == 404
    assert client.get(url, {"history_page": "x"}).status_code == 400


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_see_what_a_device_is_but_not_where(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    memory = small.memory[0]
    memory.external_id = "urn:cxl:box-a:slot-0"
    memory.save()
    _history(memory, 2)
    response = client_as(persona(who)).get(reverse("fabric:device_detail", args=[memory.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "mem-a-0" in body and "CXL capacity" in body and "1 TiB" in body
    assert "CXL memory" in body  # the pool
    for secret in (memory.serial, memory.external_id, "mem-a</a>", "fm-small", "rack-a", "pdu-a"):
        assert secret not in body
    assert "Uplinks" not in body and "ns</td>" not in body
    assert "Change history" not in body and "warning-1" not in body


def test_an_unknown_device_is_404(
    small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    assert client_as(alice).get(reverse("fabric:device_detail", args=[999999])).status_code == 404
    assert client_as(alice).get("/fabric/devices/abc/").status_code == 404


def test_a_down_uplink_is_shown_down(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    link = small.links[1]  # sw-a <-> gpu-a
    link.state = LinkState.DOWN
    link.save()
    body = (
        client_as(admin_user)
        .get(reverse("fabric:device_detail", args=[small.gpus[0].pk]))
        .content.decode()
    )
    assert "Down" in body.split('id="uplinks"', 1)[1]
