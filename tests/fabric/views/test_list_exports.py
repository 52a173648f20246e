"""The fabric's list pages sort by their columns and export what they show (every page the
filters select) as CSV and JSON, with the same scoping as the page.

The fabric is the small one of tests/factories/fabric.py.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from fabric.choices import FailureDomainKind
from fabric.models import FailureDomain
from tests.factories.fabric import HostFactory, SmallFabric

pytestmark = pytest.mark.django_db


def _body(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


def _csv(response: Any) -> list[dict[str, str]]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(_body(response))))


def _json(response: Any) -> list[dict[str, Any]]:
    assert response["Content-Type"] == "application/json"
    return list(json.loads(_body(response)))


def test_a_list_sorts_by_a_column_and_says_so_in_its_header(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    HostFactory.create(manager=small.manager, name="host-c", cores=8)
    client = client_as(admin_user)
    response = client.get(reverse("fabric:host_list"), {"ordering": "-cores"})
    assert response.status_code == 200
    cores = [h.cores for h in response.context["page"]]
    assert cores == sorted(cores, reverse=True) and cores[-1] == 8
    body = response.content.decode()
    assert 'aria-sort="descending"' in body
    # The sorted column's link reverses it; the others sort by themselves, keeping filters.
    assert 'href="?ordering=cores"' in body
    assert 'href="?ordering=name"' in body
    filtered = client.get(reverse("fabric:host_list"), {"ordering": "-cores", "q": "host"})
    assert 'href="?ordering=cores&amp;q=host"' in filtered.content.decode()
    bad = client.get(reverse("fabric:host_list"), {"ordering": "banana"})
    assert bad.status_code == 400
    assert "banana" in bad.content.decode()


@pytest.mark.parametrize(
    ("url", "noun", "first"),
    [
        ("fabric:host_list", "hosts", "host-a"),
        ("fabric:enclosure_list", "enclosures", "gpu-a"),
        ("fabric:switch_list", "switches", "sw-a"),
        ("fabric:manager_list", "managers", "fm-small"),
        ("fabric:rack_list", "racks", "rack-a"),
        ("fabric:power_feed_list", "power-feeds", "pdu-a"),
    ],
)
def test_every_fabric_list_exports_csv_and_json(
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    url: str,
    noun: str,
    first: str,
) -> None:
    client = client_as(admin_user)
    page = client.get(reverse(url))
    assert 'data-export="csv"' in page.content.decode()
    response = client.get(reverse(url), {"export": "csv"})
    assert response["Content-Disposition"] == f'attachment; filename="{noun}.csv"'
    rows = _csv(response)
    assert rows[0]["name"] == first
    as_json = _json(client.get(reverse(url), {"export": "json"}))
    assert [r["name"] for r in as_json] == [r["name"] for r in rows]


def test_an_export_carries_every_page_the_filters_select_in_the_pages_order(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    for i in range(60):  # more than a page of 50
        HostFactory.create(manager=small.manager, name=f"node-{i:02}", cores=i)
    client = client_as(admin_user)
    rows = _csv(client.get(reverse("fabric:host_list"), {"q": "node", "export": "csv"}))
    assert len(rows) == 60
    assert rows[0]["name"] == "node-00"
    ordered = _json(
        client.get(
            reverse("fabric:host_list"), {"q": "node", "ordering": "-cores", "export": "json"}
        )
    )
    assert [r["cores"] for r in ordered][:3] == [59, 58, 57]
    assert set(ordered[0]) >= {"name", "model", "vendor", "cores", "memory_gib", "rack", "serial"}
    # The page number is not the export's business: it exports every page.
    paged = _csv(
        client.get(reverse("fabric:host_list"), {"q": "node", "page": "2", "export": "csv"})
    )
    assert len(paged) == 60


def test_a_bad_export_is_a_400_naming_it(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(reverse("fabric:switch_list"), {"export": "xlsx"})
    assert response.status_code == 400
    assert "Export: must be csv or json" in response.content.decode()


def test_a_device_export_is_the_tables_for_members_without_serials_or_internals(
    small: SmallFabric,
    admin_user: Any,
    alice: Any,
    client_as: Callable[[Any], Client],
) -> None:
    small.gpus[0].serial = "SN-HIDDEN"
    small.gpus[0].save(update_fields=["serial"])
    member = _json(client_as(alice).get(reverse("fabric:device_list"), {"export": "json"}))
    assert len(member) == 10
    assert set(member[0]) == {
        "name",
        "kind",
        "model",
        "memory_gib",
        "pool",
        "state",
        "health",
        "capacity_gb",
    }
    assert "SN-HIDDEN" not in json.dumps(member)
    operator = _csv(
        client_as(admin_user).get(
            reverse("fabric:device_list"), {"kind": "gpu", "ordering": "-name", "export": "csv"}
        )
    )
    assert [r["name"] for r in operator][:2] == ["gpu-b-3", "gpu-b-2"]
    assert operator[-1]["serial"] == "SN-HIDDEN"
    assert operator[0]["enclosure"] == "gpu-b" and operator[0]["rack"] == "rack-b"


def test_members_cannot_export_operator_lists(
    small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    for url in ("fabric:host_list", "fabric:manager_list", "fabric:failure_domain_list"):
        assert client_as(alice).get(reverse(url), {"export": "csv"}).status_code == 404


def test_a_manager_export_masks_the_password_in_its_endpoint(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    small.manager.endpoint = "https://fmadmin:hunter2@fm.example:8443/redfish"
    small.manager.save(update_fields=["endpoint"])
    body = _body(client_as(admin_user).get(reverse("fabric:manager_list"), {"export": "json"}))
    assert "hunter2" not in body
    assert json.loads(body)[0]["switches"] == 2


def test_the_manager_list_filters_and_says_why_it_is_empty(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    response = client.get(reverse("fabric:manager_list"), {"is_enabled": "false"})
    assert response.status_code == 200
    assert "No fabric managers match these filters" in response.content.decode()
    assert client.get(reverse("fabric:manager_list"), {"is_enabled": "maybe"}).status_code == 400
    found = client.get(reverse("fabric:manager_list"), {"q": "SMALL", "ordering": "-poll"})
    assert [m.name for m in found.context["managers"]] == ["fm-small"]


def test_failure_domains_sort_by_what_they_take_down_and_export(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    FailureDomain.objects.create(
        manager=small.manager,
        kind=FailureDomainKind.RACK,
        key="rack:x",
        name="rack-x",
        device_count=9,
        host_count=1,
    )
    FailureDomain.objects.create(
        manager=small.manager,
        kind=FailureDomainKind.RACK,
        key="rack:y",
        name="rack-y",
        device_count=3,
        host_count=2,
    )
    client = client_as(admin_user)
    page = client.get(reverse("fabric:failure_domain_list"), {"ordering": "-devices"})
    assert [d.name for d in page.context["page"]][:2] == ["rack-x", "rack-y"]
    rows = _csv(client.get(reverse("fabric:failure_domain_list"), {"export": "csv", "q": "rack-"}))
    assert [(r["name"], r["devices_lost"], r["hosts_lost"]) for r in rows] == [
        ("rack-x", "9", "1"),
        ("rack-y", "3", "2"),
    ]


def test_links_sort_by_latency_and_export_their_ends(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    page = client.get(reverse("fabric:link_list"), {"ordering": "-latency"})
    latencies = [link.latency_ns for link in page.context["page"]]
    assert latencies == sorted(latencies, reverse=True)
    rows = _csv(client.get(reverse("fabric:link_list"), {"export": "csv", "ordering": "id"}))
    assert len(rows) == len(small.links)
    first = small.links[0]
    assert (rows[0]["id"], rows[0]["end_a"], rows[0]["end_b"]) == (
        str(first.pk),
        "sw-a:p00",
        "host-a:up0",
    )
    assert rows[0]["lanes"] == "16" and rows[0]["present"] == "True"


@pytest.mark.parametrize(
    ("columns", "endpoint"),
    [
        ("fabric.views.devices.COLUMNS", "api:device_list"),
        ("fabric.views.components.HOST_COLUMNS", "api:host_list"),
        ("fabric.views.components.ENCLOSURE_COLUMNS", "api:enclosure_list"),
        ("fabric.views.components.SWITCH_COLUMNS", "api:switch_list"),
        ("fabric.views.links.LINK_COLUMNS", "api:link_list"),
        ("fabric.views.racks.RACK_COLUMNS", "api:rack_list"),
        ("fabric.views.racks.FEED_COLUMNS", "api:power_feed_list"),
        ("fabric.views.managers.MANAGER_COLUMNS", "api:fabric_manager_list"),
        ("fabric.views.topology.DOMAIN_COLUMNS", "api:failure_domain_list"),
    ],
)
def test_every_sort_a_page_offers_the_api_offers_too(
    small: SmallFabric, admin_user: Any, api_as: Any, columns: str, endpoint: str
) -> None:
    """A page's sortable column and the API's `ordering` are the same values."""
    from importlib import import_module

    module, name = columns.rsplit(".", 1)
    sorts = [c.sort for c in getattr(import_module(module), name) if c.sort]
    assert sorts
    client = api_as(admin_user)
    for sort in sorts:
        for value in (sort, f"-{sort}"):
            response = client.get(reverse(endpoint), {"ordering": value})
            assert response.status_code == 200, (endpoint, value, response.content[:200])


def test_a_csv_cell_a_spreadsheet_would_run_is_quoted(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    HostFactory.create(manager=small.manager, name='=HYPERLINK("http://x.example","go")', cores=4)
    rows = _csv(client_as(admin_user).get(reverse("fabric:host_list"), {"export": "csv"}))
    assert rows[0]["name"] == '\'=HYPERLINK("http://x.example","go")'
    assert rows[0]["cores"] == "4"
    # JSON is data, not a sheet: as it is.
    as_json = _json(client_as(admin_user).get(reverse("fabric:host_list"), {"export": "json"}))
    assert as_json[0]["name"].startswith("=HYPERLINK")


def test_the_manager_list_pages_and_exports_every_page(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    from tests.factories.fabric import FabricManagerFactory

    for i in range(55):
        FabricManagerFactory.create(name=f"fm-{i:02}")
    client = client_as(admin_user)
    first = client.get(reverse("fabric:manager_list"))
    assert len(first.context["managers"]) == 50
    assert first.context["page"].paginator.count == 56
    second = client.get(reverse("fabric:manager_list"), {"page": "2"})
    assert [m.name for m in second.context["managers"]] == [f"fm-{i}" for i in range(50, 55)] + [
        "fm-small"
    ]
    assert second.context["managers"][-1].counts.switches == 2
    assert client.get(reverse("fabric:manager_list"), {"page": "9"}).status_code == 404
    assert len(_json(client.get(reverse("fabric:manager_list"), {"export": "json"}))) == 56
