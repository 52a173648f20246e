"""Rack, power feed and link pages: operators only; lists filter, page and say why they are
empty; a rack's elevation puts each box at its units; each page shows its history, in a
fixed number of queries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from fabric.choices import ChangeAction, ComponentState, Health, LinkState
from fabric.models import ChangeRecord, Link, PowerFeed, Rack
from tests.factories.fabric import (
    EnclosureFactory,
    HostFactory,
    LinkFactory,
    PortFactory,
    PowerFeedFactory,
    RackFactory,
    SmallFabric,
    SwitchFactory,
)
from tests.support.personas import TENANTS

U10_11 = "U10\u201311"  # host-a's units, with an en dash as the pages write it

pytestmark = pytest.mark.django_db


def _pages(small: SmallFabric) -> list[str]:
    return [
        reverse("fabric:rack_list"),
        reverse("fabric:rack_detail", args=[small.racks[0].pk]),
        reverse("fabric:power_feed_list"),
        reverse("fabric:power_feed_detail", args=[small.feeds[0].pk]),
        reverse("fabric:link_list"),
        reverse("fabric:link_detail", args=[small.links[0].pk]),
    ]


def _mount(small: SmallFabric) -> None:
    """Rack A: gpu-a at U1-4, host-a at U10-11, sw-a at U42; mem-a reports no unit."""
    for obj, unit, height in (
        (small.enclosures[0], 1, 4),
        (small.hosts[0], 10, 2),
        (small.switches[0], 42, 1),
    ):
        obj.rack_unit, obj.height_u = unit, height
        obj.save()


def test_operators_open_every_page_and_find_them_in_the_fabric_menu(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    for url in _pages(small):
        response = client.get(url)
        assert response.status_code == 200, url
    menu = response.content.decode().split('id="fabric-menu"', 1)[1].split("</ul>", 1)[0]
    for name in ("rack_list", "power_feed_list", "link_list"):
        assert f'href="{reverse(f"fabric:{name}")}"' in menu


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_get_404_and_learn_nothing(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    client = client_as(persona(who))
    for url in _pages(small):
        response = client.get(url)
        assert response.status_code == 404, url
        body = response.content.decode()
        assert "rack-a" not in body and "pdu-a" not in body and "sw-a" not in body
    home = client.get(reverse("composer:dashboard")).content.decode()
    assert reverse("fabric:rack_list") not in home


def test_anonymous_visitors_are_sent_to_log_in(small: SmallFabric, client: Client) -> None:
    for url in _pages(small):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_elevation_puts_each_box_at_its_units_and_draws_the_empty_ones(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    _mount(small)
    rack = small.racks[0]
    response = client_as(admin_user).get(reverse("fabric:rack_detail", args=[rack.pk]))
    drawing = response.context["elevation"]
    assert drawing.height == 42 and drawing.used == 7
    placed = {c.occupant.name: (c.unit, c.span, c.row) for c in drawing.cells if c.occupant}
    # Row 1 is the top unit (U42); host-a's top unit, U11, is row 32.
    assert placed == {"sw-a": (42, 1, 1), "host-a": (10, 2, 32), "gpu-a": (1, 4, 39)}
    body = response.content.decode()
    elevation = body.split('id="elevation"', 1)[1].split('class="rack-legend', 1)[0]
    host = reverse("fabric:host_detail", args=[small.hosts[0].pk])
    block = elevation.split(f'href="{host}"', 1)[0].rsplit("<a ", 1)[1]
    assert "grid-row: 32 / span 2" in block and "bg-success-subtle" in block
    assert 'class="ru-empty" style="grid-row: 2" data-unit="41"' in elevation
    assert elevation.count('class="ru-empty"') == 42 - 7
    assert U10_11 in elevation
    # mem-a is in the rack but its manager gives no unit: listed, not drawn.
    unplaced = body.split('id="rack-unplaced"', 1)[1]
    assert "mem-a" in unplaced and "gives no unit" in unplaced
    assert "host-b" not in body  # rack B's


def test_a_box_in_trouble_is_coloured_and_listed_and_an_overlap_is_reported(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    _mount(small)
    host = small.hosts[0]
    host.health = Health.CRITICAL
    host.save()
    HostFactory(name="host-late", rack=small.racks[0], rack_unit=11, manager=small.manager)
    body = (
        client_as(admin_user)
        .get(reverse("fabric:rack_detail", args=[small.racks[0].pk]))
        .content.decode()
    )
    elevation = body.split('id="elevation"', 1)[1].split('class="rack-legend', 1)[0]
    assert "bg-danger-subtle border-danger" in elevation and "Critical" in elevation
    assert "host-a" in body.split('id="rack-troubled"', 1)[1]
    assert f"U11 overlaps host-a ({U10_11})" in body.split('id="rack-unplaced"', 1)[1]


def test_the_rack_page_lists_its_feeds_and_the_health_of_what_it_holds(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    gpu = small.gpus[0]
    gpu.health = Health.WARNING
    gpu.save()
    response = client_as(admin_user).get(reverse("fabric:rack_detail", args=[small.racks[0].pk]))
    feeds = response.content.decode().split('id="rack-feeds"', 1)[1]
    assert reverse("fabric:power_feed_detail", args=[small.feeds[0].pk]) in feeds
    assert "pdu-b" not in feeds
    assert [f.fed_count for f in response.context["feeds"]] == [4]  # sw-a, host-a, gpu-a, mem-a
    assert dict(response.context["box_health"]) == {"ok": 4}
    assert dict(response.context["device_health"]) == {"warning": 1, "ok": 5}


def test_the_host_switch_and_enclosure_pages_link_their_rack_feed_units_and_links(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    _mount(small)
    client = client_as(admin_user)
    host = small.hosts[0]
    body = client.get(reverse("fabric:host_detail", args=[host.pk])).content.decode()
    assert f'href="{reverse("fabric:rack_detail", args=[small.racks[0].pk])}"' in body
    assert f'href="{reverse("fabric:power_feed_detail", args=[small.feeds[0].pk])}"' in body
    assert U10_11 in body.split('class="rack-units"', 1)[1]
    ports = body.split('id="ports"', 1)[1]
    assert reverse("fabric:link_detail", args=[small.links[0].pk]) in ports
    hosts = client.get(reverse("fabric:host_list")).content.decode()
    assert reverse("fabric:rack_detail", args=[small.racks[1].pk]) in hosts


def test_lists_filter_keep_the_filters_and_say_why_they_are_empty(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    racks = reverse("fabric:rack_list")
    RackFactory(name="rack-spare", health=Health.CRITICAL, manager=small.manager)
    assert [r.name for r in client.get(racks, {"q": "RACK-B"}).context["page"]] == ["rack-b"]
    assert [r.name for r in client.get(racks, {"health": "critical"}).context["page"]] == [
        "rack-spare"
    ]
    row = next(r for r in client.get(racks).context["page"] if r.name == "rack-a")
    assert (row.switch_count, row.host_count, row.enclosure_count, row.feed_count) == (1, 1, 2, 1)
    none = client.get(racks, {"q": "nowhere"})
    assert "No racks match these filters." in none.content.decode()
    assert 'value="nowhere"' in none.content.decode()  # the filter stays in the form
    assert client.get(racks, {"health": "banana"}).status_code == 400
    assert client.get(racks, {"page": "9"}).status_code == 404

    feeds = reverse("fabric:power_feed_list")
    in_b = client.get(feeds, {"rack": small.racks[1].pk})
    assert [f.name for f in in_b.context["page"]] == ["pdu-b"]
    assert client.get(feeds, {"rack": "x"}).status_code == 400

    links = reverse("fabric:link_list")
    isl = small.links[-1]
    isl.state = LinkState.DEGRADED
    isl.save()
    degraded = client.get(links, {"state": "degraded"})
    assert [link.pk for link in degraded.context["page"]] == [isl.pk]
    # Either end in rack B: host-b's and gpu-b's links, and the ISL to sw-b.
    in_rack_b = client.get(links, {"rack": small.racks[1].pk}).context["page"]
    assert {link.pk for link in in_rack_b} == {small.links[2].pk, small.links[3].pk, isl.pk}
    by_name = client.get(links, {"q": "host-b"}).context["page"]
    assert [link.pk for link in by_name] == [small.links[2].pk]
    assert client.get(links, {"state": "sideways"}).status_code == 400


def test_empty_lists_say_what_fills_them(
    db: None, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    for name, words in (
        ("rack_list", "No racks yet: racks appear once a fabric manager"),
        ("power_feed_list", "No power feeds yet"),
        ("link_list", "No links yet"),
    ):
        assert words in client.get(reverse(f"fabric:{name}")).content.decode()


def test_the_link_page_shows_both_ends_where_they_sit_and_what_it_carries(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    _mount(small)
    link = small.links[0]  # sw-a:p00 <-> host-a:up0
    port = link.b_port
    port.lanes = 8
    port.save()
    body = client_as(admin_user).get(reverse("fabric:link_detail", args=[link.pk])).content.decode()
    assert "sw-a ↔ host-a" in body
    ends = body.split('id="link-ends"', 1)[1].split("</table>", 1)[0]
    assert reverse("fabric:switch_detail", args=[small.switches[0].pk]) in ends
    assert reverse("fabric:host_detail", args=[small.hosts[0].pk]) in ends
    assert reverse("fabric:rack_detail", args=[small.racks[0].pk]) in ends
    assert "U10" in ends and "U42" in ends
    assert "x8 at 32 GT/s" in body  # the narrower end's
    assert "120 ns" in body and 'id="health"' in body


def test_the_power_feed_page_lists_what_it_supplies(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    _mount(small)
    feed = small.feeds[0]
    body = (
        client_as(admin_user)
        .get(reverse("fabric:power_feed_detail", args=[feed.pk]))
        .content.decode()
    )
    supplies = body.split('id="feed-supplies"', 1)[1].split("</table>", 1)[0]
    for name in ("sw-a", "host-a", "gpu-a", "mem-a"):
        assert name in supplies
    assert "host-b" not in supplies and U10_11 in supplies
    assert reverse("fabric:rack_detail", args=[small.racks[0].pk]) in body


@pytest.mark.parametrize(
    ("name", "target_type"), [("rack", "rack"), ("power_feed", "power_feed"), ("link", "link")]
)
def test_each_page_shows_its_own_history_newest_first(
    name: str,
    target_type: str,
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    objects: dict[str, Rack | PowerFeed | Link] = {
        "rack": small.racks[0],
        "power_feed": small.feeds[0],
        "link": small.links[0],
    }
    obj = objects[name]
    for health in ("warning", "critical"):
        ChangeRecord.objects.create(
            target_type=target_type,
            target_id=obj.pk,
            action=ChangeAction.CHANGED,
            changes={"health": ["ok", health]},
            source="sync job 9",
        )
    ChangeRecord.objects.create(
        target_type="host", target_id=obj.pk, changes={"health": ["ok", "someone-else"]}
    )
    client = client_as(admin_user)
    url = reverse(f"fabric:{name}_detail", args=[obj.pk])
    history = client.get(url).content.decode().split('id="history"', 1)[1]
    assert history.index("critical") < history.index("warning")
    assert "sync job 9" in history and "someone-else" not in history
    assert client.get(url, {"history_page": "two"}).status_code == 400
    assert client.get(reverse(f"fabric:{name}_detail", args=[999999])).status_code == 404


def _crowd(small: SmallFabric, n: int) -> None:
    """`n` more of everything in rack A, on its feed, each at units of its own."""
    rack, feed = small.racks[0], small.feeds[0]
    for i in range(n):
        kw = {"manager": small.manager, "rack": rack, "power_feed": feed}
        HostFactory(rack_unit=12 + 3 * i, **kw)
        EnclosureFactory(rack_unit=13 + 3 * i, **kw)
        SwitchFactory(rack_unit=14 + 3 * i, state=ComponentState.MAINTENANCE, **kw)
        PowerFeedFactory(rack=rack, manager=small.manager)
        LinkFactory(
            manager=small.manager,
            a_port=PortFactory(manager=small.manager, switch=small.switches[0]),
            b_port=PortFactory(manager=small.manager),
        )


# Every page's chrome costs five (session, user, memberships, live cursor, open alerts).
@pytest.mark.parametrize(
    ("name", "limit"),
    # COUNT and the page; the drop-downs of racks (feeds, links) and switches (links).
    [("rack_list", 7), ("power_feed_list", 8), ("link_list", 9)],
)
def test_lists_cost_the_same_queries_for_few_and_many_rows(
    name: str,
    limit: int,
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    django_assert_max_num_queries: Any,
) -> None:
    client = client_as(admin_user)
    url = reverse(f"fabric:{name}")
    client.get(url)
    with django_assert_max_num_queries(limit) as few:
        client.get(url)
    _crowd(small, 8)
    RackFactory.create_batch(8, manager=small.manager)
    with django_assert_max_num_queries(limit) as many:
        assert client.get(url).status_code == 200
    assert len(many) == len(few)


@pytest.mark.parametrize(
    ("name", "limit"),
    # rack: itself, its switches, hosts, enclosures, devices' health, feeds, alerts, history;
    # feed: itself, what it supplies (three), samples, alerts, history; link: itself (ends,
    # owners and racks joined), samples, alerts, history (COUNT and page).
    [("rack_detail", 14), ("power_feed_detail", 13), ("link_detail", 10)],
)
def test_pages_cost_the_same_queries_however_full_the_rack(
    name: str,
    limit: int,
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    django_assert_max_num_queries: Any,
) -> None:
    client = client_as(admin_user)
    obj = {"rack_detail": small.racks[0], "power_feed_detail": small.feeds[0]}.get(
        name, small.links[0]
    )
    target = name.removesuffix("_detail")
    url = reverse(f"fabric:{name}", args=[obj.pk])
    ChangeRecord.objects.create(target_type=target, target_id=obj.pk, changes={"x": [1, 2]})
    client.get(url)
    with django_assert_max_num_queries(limit) as few:
        client.get(url)
    _crowd(small, 10)
    with django_assert_max_num_queries(limit) as many:
        assert client.get(url).status_code == 200
    assert len(many) == len(few)
