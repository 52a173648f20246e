"""One blast radius everywhere: on the demo data centre, the failure-domain list, the
alert a real fault opens, the topology page's JSON, the what-if page and the API give the
same figures for a leaf switch, a GPU chassis and a power feed, and those figures are what
the domain takes (what is lost apart from what is degraded), not the whole fabric."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.choices import CompositionState
from composer.services.health_poll import health_poll_run
from fabric.models import Alert, FabricManager, FailureDomain
from fabric.services.sync import inventory_sync
from fabric.simulator.console.demo import demo_seed
from fabric.simulator.faults import fault_inject
from fabric.topology.domains import derive_domains
from fabric.topology.load import load_graph
from fabric.topology.radius import domain_impact
from fabric.topology.render import impact_json
from tests.support.compose import composed

pytestmark = pytest.mark.django_db

# (domain name, the fault that fails it, what it loses and degrades:
#  devices lost, hosts lost, devices degraded, hosts degraded)
CASES = [
    # The leaf of rack A: its 8 hosts lose their one uplink, its 4 GPU chassis and 2 I/O
    # chassis (40 devices) are cut off. Memory and storage hang off the spines: untouched.
    ("cxl-leaf-a", "switch", (40, 8, 0, 0), "40 devices and 8 hosts lost"),
    # A GPU chassis: its 8 GPUs, and no host at all.
    ("gpu-a-01", "enclosure", (8, 0, 0, 0), "8 devices lost"),
    # A power feed: the gear on it fails; what crossed spine 1 keeps a path over spine 2.
    (
        "pdu-a-1",
        "power_feed",
        (36, 4, 108, 12),
        "36 devices and 4 hosts lost; 108 devices and 12 hosts degraded",
    ),
]


@pytest.fixture
def demo(db: None) -> FabricManager:
    """The demo data centre of `make run` (144 devices), discovered by an inventory sync."""
    return demo_seed(users=False).manager


def _figures(row: Any) -> tuple[int, int, int, int]:
    return (
        row["device_count"],
        row["host_count"],
        row["devices_degraded_count"],
        row["hosts_degraded_count"],
    )


@pytest.mark.parametrize(("name", "kind", "figures", "headline"), CASES, ids=[c[0] for c in CASES])
def test_list_alert_topology_what_if_and_api_agree(
    demo: FabricManager,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    api_as: Any,
    name: str,
    kind: str,
    figures: tuple[int, int, int, int],
    headline: str,
) -> None:
    domain = FailureDomain.objects.get(manager=demo, name=name)
    client = client_as(admin_user)

    # The list: its stored figures, and the page that shows them.
    stored = (
        domain.device_count,
        domain.host_count,
        domain.devices_degraded_count,
        domain.hosts_degraded_count,
    )
    assert stored == figures
    assert domain.headline == headline
    page = client.get(reverse("fabric:failure_domain_list"), {"q": name}).content.decode()
    row = page.split(f'value="{domain.pk}"', 1)[1].split("</tr>", 1)[0]
    assert f'domain-lost-devices" title="{headline}">{figures[0]}</td>' in row
    assert f'domain-lost-hosts">{figures[1]}</td>' in row
    assert f'domain-degraded-devices text-body-secondary">{figures[2]}</td>' in row
    assert f'domain-degraded-hosts text-body-secondary">{figures[3]}</td>' in row

    # The API: the domain's row and its impact endpoint (what the topology page asks for).
    api = api_as(admin_user)
    listed = api.get(reverse("api:failure_domain_list"), {"q": name}).json()["results"]
    (api_row,) = [r for r in listed if r["id"] == domain.pk]
    assert _figures(api_row) == figures
    assert api_row["headline"] == headline
    impact = api.get(reverse("api:failure_domain_impact", args=[domain.pk])).json()
    counts = impact["counts"]
    assert (
        counts["devices"],
        counts["hosts"],
        counts["devices_degraded"],
        counts["hosts_degraded"],
    ) == figures
    assert impact["headline"] == headline
    assert impact["definition"]

    # The topology JSON of the same blast radius.
    graph = load_graph(managers=[demo.pk])
    spec = next(s for s in derive_domains(graph) if s.key == domain.key)
    drawn = impact_json(domain_impact(graph, [spec], contributors=())[1])
    assert drawn["headline"] == headline
    assert (len(drawn["devices"]), len(drawn["hosts"])) == figures[:2]
    assert (len(drawn["devices_degraded"]), len(drawn["hosts_degraded"])) == figures[2:]

    # The what-if page.
    what_if = client.get(reverse("fabric:failure_domain_what_if"), {"ids": domain.pk})
    body = what_if.content.decode()
    assert f"{headline.capitalize()}." in body
    assert f'id="count-devices">{figures[0]}<' in body
    assert f'id="count-hosts">{figures[1]}<' in body
    assert f'id="count-devices-degraded">{figures[2]} degraded<' in body

    # The alert a real fault of that element opens, before and after the failure is in the
    # tables (its links down): the same figures, and the alert list says them.
    health_poll_run(manager=demo)
    fault_inject(manager=demo, target_type=kind, target_id=name, action="fail")
    health_poll_run(manager=demo)
    alert = Alert.objects.get(source_type=kind, source_name=name, closed_at__isnull=True)
    assert _figures(alert.blast_radius) == figures
    assert alert.blast_radius["headline"] == headline
    alerts = client.get(reverse("composer:alert_list")).content.decode()
    alert_row = alerts.split(f'id="alert-{alert.pk}"', 1)[1].split("</tr>", 1)[0]
    assert headline.capitalize() in alert_row
    assert 'id="alert-blast-definition"' in alerts

    # And the stored figures once the next sync has written the failure into the tables.
    inventory_sync(manager=demo)
    domain.refresh_from_db()
    assert domain.headline == headline
    again = api.get(reverse("api:failure_domain_impact", args=[domain.pk])).json()
    assert again["headline"] == headline


# --- for whom: compositions ------------------------------------------------------------------


def test_compositions_are_hit_or_degraded_by_the_same_rule(
    demo: FabricManager, acme: Any, alice: Any, admin_user: Any, api_as: Any
) -> None:
    on_a = composed(
        tenant=acme, user=alice, name="mem-on-a", spec={"memory_gib": 512, "host": "host-a-01"}
    )
    on_b = composed(
        tenant=acme, user=alice, name="mem-on-b", spec={"memory_gib": 512, "host": "host-b-01"}
    )
    api = api_as(admin_user)

    def impact(name: str) -> dict[str, Any]:
        domain = FailureDomain.objects.get(manager=demo, name=name)
        return api.get(reverse("api:failure_domain_impact", args=[domain.pk])).json()

    # Spine 1: nothing is lost, and both keep their memory over spine 2 alone.
    spine = impact("cxl-spine-1")
    assert spine["compositions"] == []
    assert [c["name"] for c in spine["compositions_degraded"]] == ["mem-on-a", "mem-on-b"]
    assert [t["name"] for t in spine["tenants_degraded"]] == ["Acme"]
    # Leaf A: host-a-01 loses its one uplink, and with it the composition built on it.
    leaf = impact("cxl-leaf-a")
    assert [(c["name"], c["reason"]) for c in leaf["compositions"]] == [
        ("mem-on-a", "its host is lost")
    ]
    assert leaf["compositions_degraded"] == []

    # The same when it happens: host-a-01's one link fails. Nothing but the host is lost
    # (its memory box is still reached by every other host), yet the composition on it is.
    fault_inject(
        manager=demo, target_type="link", target_id="cxl-leaf-a/p03~host-a-01/p0", action="fail"
    )
    health_poll_run(manager=demo)
    alert = Alert.objects.get(source_type="link", closed_at__isnull=True)
    assert _figures(alert.blast_radius) == (0, 1, 0, 0)
    assert [c["name"] for c in alert.blast_radius["compositions"]] == ["mem-on-a"]
    on_a.refresh_from_db()
    on_b.refresh_from_db()
    assert on_a.state == CompositionState.DEGRADED
    assert on_b.state == CompositionState.READY
