"""What tenants read carries no fabric internals: placement explanations without switch
names, alerts without element names or the fabric's counts — on the pages, in the API and on
the websocket, for alice (whose composition is hurt) and carol (who hears nothing of it),
while operators keep the names."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.urls import reverse

from composer.models import Composition
from composer.services.compositions import composition_request
from composer.services.health_poll import health_poll_run
from fabric.models import Alert, FabricManager, Host, Switch
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from tests.fabric.simulated_world import simulated_manager
from tests.support.compose import composed
from tests.support.text import named as _named
from tests.support.websocket import db, open_as, quiet, receive, run, session_cookie, use_layer

TWO_GPUS_AND_MEMORY = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 256}
# The fabric's figures of a blast radius, as operators read them ("8 devices lost",
# "8 devices, 16 hosts"): never shown to a tenant.
FABRIC_COUNTS = re.compile(r"\d+ devices?(, \d+ hosts?| (and \d+ hosts? )?(lost|degraded))")
L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


def _fail_chassis(manager: FabricManager, composition: Composition) -> Alert:
    chassis = composition.allocations.get(device__kind="gpu").device.enclosure
    fault_inject(manager=manager, target_type="enclosure", target_id=chassis.name, action="fail")
    return Alert.objects.get(pk__in=health_poll_run(manager=manager).opened)


# --- placement explanations ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_plan_names_switches_to_operators_only(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    carol: Any,
    admin_user: Any,
    client_as: Any,
    api_as: Any,
) -> None:
    switches = list(Switch.objects.values_list("name", flat=True))
    composition = composition_request(
        tenant=acme, requested_by=alice, spec=TWO_GPUS_AND_MEMORY, name="c1"
    )
    stored = json.dumps(composition.placement)
    assert any(name in stored for name in switches), "the operator's words name the switch"

    def leaks(text: str) -> list[str]:
        return [name for name in switches if name in text]

    page = reverse("composer:composition_detail", args=[composition.pk])
    api = f"/api/v1/compositions/{composition.pk}/"
    body = {"spec": TWO_GPUS_AND_MEMORY}
    form = {"item_0_kind": "gpu", "item_0_count": "2", "memory_gib": "256", "policy": "none"}
    htmx = {"HTTP_HX_REQUEST": "true"}

    alice_page = client_as(alice).get(page).content.decode()
    assert "own switch;" in alice_page and not leaks(alice_page)
    alice_api = api_as(alice).get(api).json()["placement"]
    assert alice_api["explanation"] and not leaks(json.dumps(alice_api))
    preview = api_as(alice).post("/api/v1/compositions/preview/", body, format="json").json()
    assert preview["explanation"] and not leaks(json.dumps(preview))
    drawn = client_as(alice).post(reverse("composer:composition_preview"), form, **htmx)
    assert b'id="placement-explanation"' in drawn.content and not leaks(drawn.content.decode())
    # Carol sees none of it, and her own plans do not name switches either.
    assert client_as(carol).get(page).status_code == 404
    assert api_as(carol).get(api).status_code == 404
    hers = api_as(carol).post("/api/v1/compositions/preview/", body, format="json").json()
    assert hers["explanation"] and not leaks(json.dumps(hers))

    admin_page = client_as(admin_user).get(page).content.decode()
    assert leaks(admin_page)
    assert leaks(json.dumps(api_as(admin_user).get(api).json()["placement"]))


@pytest.mark.django_db
def test_a_rejections_nearest_alternative_names_no_host_to_tenants(
    synced: FabricManager, acme: Any, alice: Any, admin_user: Any, api_as: Any
) -> None:
    hosts = list(Host.objects.values_list("name", flat=True))
    spec = {"items": [{"kind": "gpu", "count": 1}], "host_memory_gib": 60_000}
    response = api_as(alice).post(
        "/api/v1/compositions/", {"name": "x", "spec": spec}, format="json"
    )
    assert response.status_code == 422
    nearest = response.json()["rejection"]["nearest"]
    assert nearest.startswith("The largest free host has ")
    assert not any(_named(json.dumps(response.json()), name) for name in hosts)
    detail = api_as(admin_user).get(response.json()["composition"]).json()
    assert any(_named(detail["placement"]["nearest"], name) for name in hosts)


# --- alerts ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_alert_reads_in_the_tenants_words_on_page_and_api(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    carol: Any,
    admin_user: Any,
    client_as: Any,
    api_as: Any,
) -> None:
    composition = composed(tenant=acme, user=alice, spec=L40S, name="acme-infer")
    alert = _fail_chassis(synced, composition)
    chassis = alert.source_name
    words = "An enclosure your compositions depend on failed."

    alice_alerts = client_as(alice).get(reverse("composer:alert_list")).content.decode()
    assert words in alice_alerts and "acme-infer" in alice_alerts
    assert not _named(alice_alerts, chassis)
    assert not FABRIC_COUNTS.search(alice_alerts)
    # Her composition's page says why it is degraded, in the same words.
    page = client_as(alice).get(reverse("composer:composition_detail", args=[composition.pk]))
    assert words in page.content.decode() and not _named(page.content.decode(), chassis)
    api = api_as(alice).get(f"/api/v1/compositions/{composition.pk}/").json()
    assert not _named(json.dumps(api), chassis)
    assert api_as(alice).get(f"/api/v1/alerts/{alert.pk}/").json()["message"] == words

    carol_alerts = client_as(carol).get(reverse("composer:alert_list")).content.decode()
    assert f'data-alert-id="{alert.pk}"' not in carol_alerts and words not in carol_alerts
    assert api_as(carol).get(f"/api/v1/alerts/{alert.pk}/").status_code == 404

    admin_alerts = client_as(admin_user).get(reverse("composer:alert_list")).content.decode()
    assert _named(admin_alerts, chassis) and FABRIC_COUNTS.search(admin_alerts)


@pytest.mark.django_db(transaction=True)
def test_an_alert_reaches_alice_in_her_words_over_the_websocket_and_carol_not_at_all(
    redis_url: str, settings: Any, acme: Any, alice: Any, carol: Any, admin_user: Any
) -> None:
    use_layer(settings, redis_url)
    manager = simulated_manager()
    inventory_sync(manager=manager)
    composition = composed(tenant=acme, user=alice, spec=L40S, name="acme-infer")
    chassis = composition.allocations.get(device__kind="gpu").device.enclosure.name
    cookies = {u.username: session_cookie(u) for u in (admin_user, alice, carol)}

    async def drain(ws: Any) -> list[dict[str, Any]]:
        """Every event until the alert's, which comes last of a poll's."""
        heard: list[dict[str, Any]] = []
        while not heard or heard[-1]["event_type"] != "fabric.alert":
            message = await receive(ws, 5.0)
            if message["type"] == "event":
                heard.append(message)
        return heard

    async def scenario() -> None:
        op, _ = await open_as(cookies["admin"])
        a, _ = await open_as(cookies["alice"])
        c, _ = await open_as(cookies["carol"])
        await db(_fail_chassis)(manager, composition)

        for_alice = await drain(a)
        text = json.dumps(for_alice)
        alert = for_alice[-1]["payload"]
        assert alert["alert"]["message"] == "An enclosure your compositions depend on failed."
        assert set(alert["blast_radius"]) <= {
            "effect",
            "compositions",
            "composition_count",
            "compositions_degraded",
            "compositions_degraded_count",
        }
        assert not _named(text, chassis), text
        state = [e for e in for_alice if e["event_type"] == "composition.state"]
        assert (
            state
            and "An enclosure your compositions depend on failed."
            in (state[-1]["payload"]["reason"])
        )

        for_operator = json.dumps(await drain(op))
        assert _named(for_operator, chassis)
        assert await quiet(c, 0.5)
        for ws in (op, a, c):
            await ws.disconnect()

    run(scenario)


def test_every_rule_has_words_for_tenants() -> None:
    from fabric.health import rules
    from fabric.health.wording import tenant_alert_message

    for rule in rules.RULES:
        message = tenant_alert_message("switch", rule)
        assert message.startswith("A switch your compositions depend on ") and "(" not in message
    assert tenant_alert_message("fabric_manager", rules.MANAGER_UNREACHABLE) == (
        "The fabric manager your compositions depend on is unreachable."
    )
