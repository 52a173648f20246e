"""Host, enclosure and switch pages: operators only, with ports, links, devices and history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from fabric.choices import ChangeAction, ComponentState, DeviceState, Health, LinkState
from fabric.models import ChangeRecord
from tests.factories.fabric import (
    EnclosureFactory,
    FabricManagerFactory,
    HostFactory,
    SmallFabric,
    SwitchFactory,
)
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db


def _pages(small: SmallFabric) -> list[str]:
    return [
        reverse("fabric:host_list"),
        reverse("fabric:host_detail", args=[small.hosts[0].pk]),
        reverse("fabric:enclosure_list"),
        reverse("fabric:enclosure_detail", args=[small.enclosures[0].pk]),
        reverse("fabric:switch_list"),
        reverse("fabric:switch_detail", args=[small.switches[0].pk]),
    ]


def test_operators_open_every_component_page(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    for url in _pages(small):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_get_404_on_every_component_page(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    client = client_as(persona(who))
    for url in _pages(small):
        response = client.get(url)
        assert response.status_code == 404, url
        body = response.content.decode()
        assert small.switches[0].serial not in body
        assert "sw-a" not in body and "host-a" not in body


def test_anonymous_visitors_are_sent_to_log_in(small: SmallFabric, client: Client) -> None:
    for url in _pages(small):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_switch_page_lists_ports_and_what_each_is_cabled_to(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    isl = small.links[-1]
    isl.state = LinkState.DEGRADED
    isl.bandwidth_gbps = 31.5
    isl.save()
    switch = small.switches[0]
    response = client_as(admin_user).get(reverse("fabric:switch_detail", args=[switch.pk]))
    body = response.content.decode()
    assert switch.serial in body
    ports = body.split('id="ports"', 1)[1]
    # Host-facing port to host-a (120 ns), downstream to enclosure gpu-a (250 ns), ISL to sw-b.
    assert reverse("fabric:host_detail", args=[small.hosts[0].pk]) in ports
    assert reverse("fabric:enclosure_detail", args=[small.enclosures[0].pk]) in ports
    assert reverse("fabric:switch_detail", args=[small.switches[1].pk]) in ports
    assert "120 ns" in ports and "250 ns" in ports and "300 ns" in ports
    assert "64 GB/s" in ports and "31.5 GB/s" in ports
    assert "Degraded" in ports


def test_the_host_page_shows_its_uplink_and_bound_devices(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    host = small.hosts[0]
    for gpu in small.gpus[:2]:
        gpu.bound_host = host
        gpu.state = DeviceState.BOUND
        gpu.save()
    response = client_as(admin_user).get(reverse("fabric:host_detail", args=[host.pk]))
    body = response.content.decode()
    assert host.serial in body
    assert "sw-a" in body.split('id="ports"', 1)[1]
    bound = body.split('id="bound-devices"', 1)[1]
    assert "gpu-a-0" in bound and "gpu-a-1" in bound and "gpu-a-2" not in bound


def test_the_enclosure_page_lists_every_device_in_it(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    enclosure = small.enclosures[1]
    body = (
        client_as(admin_user)
        .get(reverse("fabric:enclosure_detail", args=[enclosure.pk]))
        .content.decode()
    )
    devices = body.split('id="enclosure-devices"', 1)[1]
    for i in range(4):
        assert f"gpu-b-{i}" in devices
    assert "gpu-a-0" not in devices
    assert "sw-b" in body.split('id="ports"', 1)[1]


def test_component_history_is_shown_newest_first(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    switch = small.switches[1]
    for health in ("warning", "critical"):
        ChangeRecord.objects.create(
            target_type="switch",
            target_id=switch.pk,
            target_label=switch.name,
            action=ChangeAction.CHANGED,
            changes={"health": ["ok", health]},
            source="sync job 7",
        )
    ChangeRecord.objects.create(
        target_type="host",
        target_id=switch.pk,
        action=ChangeAction.CHANGED,
        changes={"health": ["ok", "other-object"]},
    )
    body = (
        client_as(admin_user)
        .get(reverse("fabric:switch_detail", args=[switch.pk]))
        .content.decode()
    )
    history = body.split('id="history"', 1)[1]
    assert history.index("critical") < history.index("warning")
    assert "sync job 7" in history
    assert "other-object" not in history


def test_component_lists_filter_and_reject_bad_values(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    HostFactory(name="host-spare", health=Health.CRITICAL, state=ComponentState.MAINTENANCE)
    hosts = reverse("fabric:host_list")
    critical = client.get(hosts, {"health": "critical"})
    assert [h.name for h in critical.context["page"]] == ["host-spare"]
    in_rack = client.get(hosts, {"rack": small.racks[1].pk})
    assert [h.name for h in in_rack.context["page"]] == ["host-b"]
    assert [h.name for h in client.get(hosts, {"q": "HOST-A"}).context["page"]] == ["host-a"]
    for bad in ({"health": "banana"}, {"rack": "abc"}, {"state": "x"}):
        response = client.get(hosts, bad)
        assert response.status_code == 400
        assert "Select a valid choice" in response.content.decode()
    assert client.get(hosts, {"page": "99"}).status_code == 404
    assert client.get(hosts, {"page": "two"}).status_code == 400
    enclosures = reverse("fabric:enclosure_list")
    memory = client.get(enclosures, {"kind": "cxl_memory_box"})
    assert [e.name for e in memory.context["page"]] == ["mem-a"]
    assert client.get(enclosures, {"kind": "fridge"}).status_code == 400
    switches = reverse("fabric:switch_list")
    assert client.get(switches, {"protocol": "cxl"}).context["page"].paginator.count == 2
    assert client.get(switches, {"tier": "core"}).status_code == 400


@pytest.mark.parametrize("name", ["host", "enclosure", "switch", "device"])
def test_a_list_narrowed_to_a_manager_names_it_and_keeps_it(
    name: str, small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    """The manager page links its counts to lists narrowed to it: the filter bar says so (a
    hidden filter would read as "every host") and keeps it when other filters change."""
    client = client_as(admin_user)
    other = FabricManagerFactory(name="fm-other")
    HostFactory(name="host-other", manager=other)
    url = reverse(f"fabric:{name}_list")
    narrowed = client.get(url, {"manager": small.manager.pk})
    assert narrowed.context["filtered_manager"] == small.manager
    page = narrowed.content.decode()
    block = page[page.index('id="filter-manager"') :]
    assert f'name="manager" value="{small.manager.pk}"' in block
    assert "fm-small" in block[: block.index("</div>")]
    assert "host-other" not in page
    plain = client.get(url)
    assert plain.context["filtered_manager"] is None
    assert 'id="filter-manager"' not in plain.content.decode()


@pytest.mark.parametrize("name", ["host", "enclosure", "switch"])
def test_unknown_components_are_404_and_bad_history_pages_400(
    name: str, small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    assert client.get(reverse(f"fabric:{name}_detail", args=[999999])).status_code == 404
    obj = {"host": small.hosts[0], "enclosure": small.enclosures[0], "switch": small.switches[0]}
    detail = reverse(f"fabric:{name}_detail", args=[obj[name].pk])
    assert client.get(detail, {"history_page": "nine"}).status_code == 400


@pytest.mark.parametrize("name", ["host", "enclosure", "switch"])
def test_component_lists_cost_the_same_queries_for_few_and_many_rows(
    name: str, small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    url = reverse(f"fabric:{name}_list")
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    HostFactory.create_batch(20)
    EnclosureFactory.create_batch(20)
    SwitchFactory.create_batch(20)
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(many.captured_queries) == len(few.captured_queries)


@pytest.mark.parametrize("name", ["host", "enclosure", "switch"])
def test_a_list_that_matches_nothing_says_so(
    name: str, small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    """An empty page of results is still a page: its table says why it is empty (it used
    to be left out, leaving an empty card)."""
    response = client_as(admin_user).get(reverse(f"fabric:{name}_list"), {"q": "nowhere"})
    body = response.content.decode()
    noun = {"host": "hosts", "enclosure": "enclosures", "switch": "switches"}[name]
    assert f"No {noun} match these filters." in body
    assert f"of 0 {noun}" not in body  # no footer counting nothing
