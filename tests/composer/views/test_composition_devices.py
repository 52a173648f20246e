"""A composition's device table says how each device is doing now: its health, whether the
composition's host still reaches it, and its working path — to the tenant too, without
naming a switch or a link."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from composer.choices import CompositionState
from composer.models import Composition
from composer.services.health_poll import health_poll_run
from fabric.models import FabricManager, Switch
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from fabric.topology.load import load_graph
from tests.fabric.simulated_world import simulated_manager
from tests.support.compose import composed

pytestmark = pytest.mark.django_db

SPEC = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


@pytest.fixture
def ready(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return composed(tenant=acme, user=alice, name="c1", spec=SPEC)


def _table(client: Client, composition: Composition) -> str:
    response = client.get(reverse("composer:composition_live", args=[composition.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    return body.split('id="composition-devices"', 1)[1].split("</table>", 1)[0]


def _row(table: str, composition: Composition, kind: str) -> str:
    allocation = composition.allocations.get(device__kind=kind, released_at__isnull=True)
    return table.split(f'id="allocation-{allocation.pk}"', 1)[1].split("</tr>", 1)[0]


def test_a_healthy_composition_shows_each_device_healthy_and_reachable(
    ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    table = _table(client_as(alice), ready)
    for kind in ("gpu", "cxl_memory"):
        row = _row(table, ready, kind)
        assert "table-danger" not in row.split(">", 1)[0]
        assert "OK" in row and "reachable:" in row and " ns · " in row
        assert "cut off" not in row and "Lost" not in row


@pytest.mark.parametrize("who", ["alice", "bob", "admin_user"])
def test_devices_cut_off_by_a_switch_failure_show_cut_off_not_bound_at_a_latency(
    request: pytest.FixtureRequest,
    synced: FabricManager,
    ready: Composition,
    client_as: Callable[[Any], Client],
    who: str,
) -> None:
    # The tiny world's one leaf carries every host: when it fails, the devices themselves
    # stay healthy, but the composition's host reaches none of them.
    fault_inject(manager=synced, target_type="switch", target_id="cxl-leaf-a", action="fail")
    health_poll_run(manager=synced)
    ready.refresh_from_db()
    assert ready.state == CompositionState.DEGRADED

    table = _table(client_as(request.getfixturevalue(who)), ready)
    for kind in ("gpu", "cxl_memory"):
        row = _row(table, ready, kind)
        assert 'class="table-danger"' in row.split(">", 1)[0]
        assert "cut off: no path" in row and 'title="Lost: cut off from ' in row
        assert " ns" not in row  # no latency of a path that no longer works
    # The tenant learns that it is cut off, not which switch cut it.
    assert not any(s.name in table for s in Switch.objects.all())


def test_a_failed_gpu_shows_its_health_while_the_rest_stays_fine(
    synced: FabricManager, ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    gpu = ready.allocations.get(device__kind="gpu").device
    fault_inject(manager=synced, target_type="device", target_id=gpu.name, action="fail")
    health_poll_run(manager=synced)

    table = _table(client_as(alice), ready)
    failed = _row(table, ready, "gpu")
    assert "Critical" in failed and 'title="Lost: failed"' in failed
    memory = _row(table, ready, "cxl_memory")
    assert "OK" in memory and "reachable:" in memory and "Lost" not in memory


def test_other_tenants_get_404_on_the_device_table(
    ready: Composition, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(carol).get(reverse("composer:composition_live", args=[ready.pk]))
    assert response.status_code == 404


def test_the_live_part_listens_for_the_health_of_the_devices_it_holds(
    ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(alice).get(reverse("composer:composition_live", args=[ready.pk]))
    held = sorted(ready.allocations.values_list("device_id", flat=True))
    shown = body.content.decode().split('data-live-devices="', 1)[1].split('"', 1)[0]
    assert sorted(int(pk) for pk in shown.split()) == held


def test_the_page_reads_only_its_hosts_fabric_in_the_same_queries_whatever_the_others(
    ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    """The page and its live partial (reloaded every few seconds) read the topology of the
    composition's host's manager, not every manager's: another manager's fabric costs them
    nothing, neither a query nor a row."""
    client = client_as(alice)
    urls = [
        reverse("composer:composition_detail", args=[ready.pk]),
        reverse("composer:composition_live", args=[ready.pk]),
    ]

    def queries() -> list[int]:
        counts = []
        for url in urls:
            client.get(url)
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200
            counts.append(len(captured.captured_queries))
        return counts

    alone = queries()
    other = simulated_manager(name="other", fabric="other")
    inventory_sync(manager=other)
    with mock.patch("composer.selectors.health.load_graph", wraps=load_graph) as loads:
        assert queries() == alone
    assert {tuple(call.kwargs["managers"]) for call in loads.call_args_list} == {
        (ready.host.manager_id,)
    }
