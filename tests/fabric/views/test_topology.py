"""The topology page, the failure-domain list and what-if: operators only, bad input a 400 or
404 page that says why, never a 500."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from fabric.models import FailureDomain
from fabric.services.domains import domains_refresh
from tests.factories.fabric import SmallFabric, fabric_small
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def domains(small: SmallFabric) -> SmallFabric:
    domains_refresh(manager=small.manager)
    return small


def domain(key: str) -> FailureDomain:
    return FailureDomain.objects.get(key=key)


def _pages(small: SmallFabric) -> list[str]:
    sw_a = domain(f"switch:{small.switches[0].pk}")
    return [
        reverse("fabric:topology"),
        reverse("fabric:failure_domain_list"),
        f"{reverse('fabric:failure_domain_what_if')}?ids={sw_a.pk}",
    ]


def test_operators_open_the_topology_and_failure_domain_pages(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    for url in _pages(domains):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_get_404_on_the_topology_and_failure_domain_pages(
    who: str,
    domains: SmallFabric,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(persona(who))
    for url in _pages(domains):
        response = client.get(url)
        assert response.status_code == 404, url
        body = response.content.decode()
        assert "sw-a" not in body and "gpu-a-0" not in body
    # ...and the navbar does not offer them.
    body = client.get(reverse("fabric:device_list")).content.decode()
    assert reverse("fabric:topology") not in body
    assert reverse("fabric:failure_domain_list") not in body


def test_anonymous_visitors_are_sent_to_log_in(domains: SmallFabric, client: Client) -> None:
    for url in _pages(domains):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_navbar_offers_operators_the_topology_and_failure_domains(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(admin_user).get(reverse("fabric:device_list")).content.decode()
    assert f'href="{reverse("fabric:topology")}"' in body
    assert f'href="{reverse("fabric:failure_domain_list")}"' in body


def test_the_topology_page_loads_vendored_scripts_and_names_its_endpoints(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(admin_user).get(reverse("fabric:topology")).content.decode()
    for script in ("cytoscape-3.35.0.min.js", "cytoscape-fcose-2.2.0.js", "js/topology.js"):
        assert script in body
    # No CDN: every script and stylesheet is served from our own static files.
    assert not re.search(r'(src|href)="(https?:)?//', body)
    assert f'data-api-topology="{reverse("api:topology")}"' in body
    assert f'data-api-paths="{reverse("api:paths")}"' in body
    assert f'data-api-domains="{reverse("api:failure_domain_list")}"' in body
    # The filters list the fabric's managers and racks.
    assert "fm-small" in body and "rack-a" in body and "rack-b" in body


def test_the_topology_page_preselects_its_filters(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    rack = domains.racks[1]
    url = f"{reverse('fabric:topology')}?manager={domains.manager.pk}&rack={rack.pk}&collapse=true"
    body = client_as(admin_user).get(url).content.decode()
    assert f'<option value="{rack.pk}" selected>rack-b</option>' in body
    assert f'<option value="{domains.manager.pk}" selected>fm-small</option>' in body
    assert '<option value="true" selected>' in body


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("manager=abc", "manager: &#x27;abc&#x27; is not an id."),
        ("rack=999999", "rack: there is no rack 999999."),
        ("collapse=maybe", "collapse:"),
        ("domains=1,x", "domains: Not failure-domain ids: x."),
    ],
)
def test_bad_topology_parameters_are_a_400_naming_them(
    domains: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    query: str,
    message: str,
) -> None:
    response = client_as(admin_user).get(f"{reverse('fabric:topology')}?{query}")
    assert response.status_code == 400
    assert message in response.content.decode()


def test_the_failure_domain_list_shows_counts_and_filters_by_kind(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    sw_a = domain(f"switch:{domains.switches[0].pk}")
    body = client.get(reverse("fabric:failure_domain_list")).content.decode()
    assert f'name="ids" value="{sw_a.pk}"' in body
    assert "rack-a" in body and "pdu-a" in body and "gpu-a" in body

    table = client.get(reverse("fabric:failure_domain_list"), {"kind": "switch"}).content.decode()
    table = table.split('id="domain-table"', 1)[1]
    assert "sw-a" in table and "sw-b" in table
    assert "rack-a" not in table and "pdu-a" not in table
    row = table.split(f'value="{sw_a.pk}"', 1)[1].split("</tr>", 1)[0]
    assert f'<td class="num domain-lost-devices" title="{sw_a.headline}">4</td>' in row
    assert '<td class="num domain-lost-hosts">1</td>' in row
    assert sw_a.headline == "4 devices and 1 host lost"
    body = client.get(reverse("fabric:failure_domain_list")).content.decode()
    assert 'id="blast-definition"' in body and "Degraded: still reached" in body

    searched = client.get(reverse("fabric:failure_domain_list"), {"q": "pdu-b"}).content.decode()
    searched = searched.split('id="domain-table"', 1)[1]
    assert "pdu-b" in searched and "pdu-a" not in searched and "sw-a" not in searched
    nothing = client.get(reverse("fabric:failure_domain_list"), {"q": "nowhere"})
    assert "No failure domains match these filters." in nothing.content.decode()


def test_a_bad_kind_on_the_failure_domain_list_is_a_400(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(reverse("fabric:failure_domain_list"), {"kind": "banana"})
    assert response.status_code == 400
    assert "banana" in response.content.decode()


def test_what_if_a_switch_fails_lists_devices_hosts_and_links_with_reasons(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    sw_a = domain(f"switch:{domains.switches[0].pk}")
    url = reverse("fabric:failure_domain_what_if")
    body = client_as(admin_user).get(url, {"ids": str(sw_a.pk)}).content.decode()

    assert "What if sw-a fails?" in body
    assert "4 devices and 1 host lost." in body  # the headline
    devices = body.split('id="what-if-devices"', 1)[1].split('id="what-if-hosts"', 1)[0]
    for gpu in domains.gpus[:4]:
        assert reverse("fabric:device_detail", args=[gpu.pk]) in devices
        assert gpu.name in devices
        row = devices.split(f">{gpu.name}</a></td>", 1)[1].split("</tr>", 1)[0]
        assert "cut off: no path to any host" in row
    # gpu-b stays up for host-b; only host-a, which is lost itself, no longer reaches it.
    assert domains.gpus[4].name not in body.split('id="what-if-switches"', 1)[0]
    hosts = body.split('id="what-if-hosts"', 1)[1].split('id="what-if-devices-degraded"', 1)[0]
    assert reverse("fabric:host_detail", args=[domains.hosts[0].pk]) in hosts
    assert "cut off: loses its last uplink" in hosts
    assert "No devices degraded." in body and "No hosts degraded." in body
    switches = body.split('id="what-if-switches"', 1)[1].split('id="what-if-enclosures"', 1)[0]
    assert reverse("fabric:switch_detail", args=[domains.switches[0].pk]) in switches
    assert f'href="{reverse("fabric:topology")}?domains={sw_a.pk}"' in body
    links = body.split('id="what-if-links"', 1)[1]
    for link in domains.links[:2]:  # sw-a to host-a and to gpu-a, each to its page
        assert f'href="{reverse("fabric:link_detail", args=[link.pk])}"' in links


def test_what_if_two_domains_fail_is_their_union_and_links_the_topology(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    enc_a = domain(f"enclosure:{domains.enclosures[0].pk}")
    enc_b = domain(f"enclosure:{domains.enclosures[1].pk}")
    url = reverse("fabric:failure_domain_what_if")
    body = client_as(admin_user).get(url, {"ids": f"{enc_a.pk},{enc_b.pk}"}).content.decode()

    assert "What if gpu-a and gpu-b fail?" in body
    devices = body.split('id="what-if-devices"', 1)[1].split('id="what-if-hosts"', 1)[0]
    assert all(gpu.name in devices for gpu in domains.gpus)
    assert f'href="{reverse("fabric:topology")}?domains={enc_a.pk},{enc_b.pk}"' in body


def test_what_if_takes_ticked_checkboxes_as_repeated_ids(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    enc_a = domain(f"enclosure:{domains.enclosures[0].pk}")
    enc_b = domain(f"enclosure:{domains.enclosures[1].pk}")
    url = f"{reverse('fabric:failure_domain_what_if')}?ids={enc_a.pk}&ids={enc_b.pk}"
    response = client_as(admin_user).get(url)
    assert response.status_code == 200
    assert "What if gpu-a and gpu-b fail?" in response.content.decode()


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ("", "Choose at least one failure domain."),
        ("abc", "Not failure-domain ids: abc."),
        ("1,x", "Not failure-domain ids: x."),
        ("-1", "Not failure-domain ids: -1."),
        (",".join(str(i) for i in range(1, 60)), "At most 50 failure domains at once"),
    ],
)
def test_malformed_ids_are_a_400_page_that_says_why(
    domains: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    ids: str,
    message: str,
) -> None:
    response = client_as(admin_user).get(reverse("fabric:failure_domain_what_if"), {"ids": ids})
    assert response.status_code == 400
    body = response.content.decode()
    assert message in body
    assert 'id="what-if-error"' in body


def test_unknown_ids_are_a_404_naming_them(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    sw_a = domain(f"switch:{domains.switches[0].pk}")
    response = client_as(admin_user).get(
        reverse("fabric:failure_domain_what_if"), {"ids": f"{sw_a.pk},999999"}
    )
    assert response.status_code == 404
    assert "No failure domain with id 999999." in response.content.decode()


def test_without_ids_the_what_if_page_is_a_400(
    domains: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(reverse("fabric:failure_domain_what_if"))
    assert response.status_code == 400


def test_the_device_page_lists_its_failure_domains_for_operators(
    admin_user: Any, alice: Any, client: Client
) -> None:
    small = fabric_small()
    domains_refresh(manager=small.manager)
    gpu = small.gpus[0]
    client.force_login(admin_user)

    body = client.get(f"/fabric/devices/{gpu.pk}/").content.decode()

    assert 'id="failure-domains"' in body
    for domain in gpu.failure_domains.all():
        assert f"?ids={domain.pk}" in body
    assert gpu.failure_domains.filter(kind="enclosure").exists()
    client.force_login(alice)
    assert 'id="failure-domains"' not in client.get(f"/fabric/devices/{gpu.pk}/").content.decode()
