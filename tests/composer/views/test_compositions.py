"""Composition pages: the list, the request form with its preview, the composition page,
decompose, and the holders shown on device and pool pages — for every persona."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from composer.choices import CompositionState
from composer.models import Allocation, Composition, Job, StateChange, Template
from fabric.models import Device, FabricManager
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager
from tests.support.personas import PERSONAS

pytestmark = pytest.mark.django_db

HTMX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}
TWO_GPUS = {"item_0_kind": "gpu", "item_0_count": "2", "policy": "none"}


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    inventory_sync(manager=sim_manager)
    return sim_manager


@pytest.fixture
def comps(acme: Any, globex: Any, alice: Any, carol: Any) -> dict[str, Composition]:
    template = Template.objects.create(name="tiny", slug="tiny", spec={"cores": 1})
    return {
        "acme": Composition.objects.create(
            tenant=acme, name="acme-train", requested_by=alice, state=CompositionState.READY
        ),
        "acme_tpl": Composition.objects.create(
            tenant=acme, name="acme-infer", template=template, state=CompositionState.RELEASED
        ),
        "globex": Composition.objects.create(
            tenant=globex, name="globex-secret", requested_by=carol, state=CompositionState.READY
        ),
    }


def _names(response: Any) -> set[str]:
    return {c.name for c in response.context["page"]}


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("admin_user", {"acme-train", "acme-infer", "globex-secret"}),
        ("alice", {"acme-train", "acme-infer"}),
        ("bob", {"acme-train", "acme-infer"}),
        ("carol", {"globex-secret"}),
    ],
)
def test_the_list_shows_only_what_the_viewer_may_see(
    who: str,
    expected: set[str],
    comps: dict[str, Composition],
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(persona(who))
    response = client.get(reverse("composer:composition_list"))
    assert response.status_code == 200
    assert _names(response) == expected
    assert b"globex-secret" not in response.content or who in ("admin_user", "carol")
    # Everyone has the navbar entry; only members who can write get the button.
    assert b'href="/compositions/"' in response.content
    assert (b'id="request-composition"' in response.content) == (who != "bob")


def test_the_list_filters_and_refuses_bad_filters(
    comps: dict[str, Composition], admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    url = reverse("composer:composition_list")
    assert _names(client.get(url, {"state": "released"})) == {"acme-infer"}
    assert _names(client.get(url, {"tenant": "globex"})) == {"globex-secret"}
    assert _names(client.get(url, {"template": "tiny"})) == {"acme-infer"}
    assert _names(client.get(url, {"q": "TRAIN"})) == {"acme-train"}
    bad = client.get(url, {"state": "banana"})
    assert bad.status_code == 400 and b"banana" in bad.content
    assert client.get(url, {"page": "9"}).status_code == 404
    partial = client.get(url, {"q": "acme"}, HTTP_HX_TARGET="composition-table", **HTMX)
    assert partial.status_code == 200 and b"<html" not in partial.content


def test_tenants_get_no_tenant_filter(
    comps: dict[str, Composition], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(reverse("composer:composition_list"), {"tenant": "globex"})
    assert "tenant" not in response.context["form"].fields
    assert _names(response) == {"acme-train", "acme-infer"}


@pytest.mark.parametrize("who", PERSONAS)
def test_the_composition_page_is_a_404_for_other_tenants(
    who: str,
    comps: dict[str, Composition],
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(persona(who))
    acme = comps["acme"]
    for name in ("composer:composition_detail", "composer:composition_live"):
        response = client.get(reverse(name, args=[acme.pk]))
        assert response.status_code == (404 if who == "carol" else 200)
    if who != "carol":
        page = client.get(reverse("composer:composition_detail", args=[acme.pk]))
        # READY: live updates only (a slow poll while they are down); the decompose button
        # only for those who can write.
        assert b'hx-trigger="refresh, every 30s [composerPollFallback()]"' in page.content
        assert f'data-live-composition="{acme.pk}"'.encode() in page.content
        assert (b'id="decompose-button"' in page.content) == (who != "bob")


def test_the_page_polls_while_the_composition_changes(
    acme: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    composition = Composition.objects.create(
        tenant=acme, name="busy", state=CompositionState.BINDING
    )
    page = client_as(alice).get(reverse("composer:composition_detail", args=[composition.pk]))
    assert b'hx-trigger="refresh, every 2s [composerPollFallback()]"' in page.content
    assert b'id="decompose-button"' not in page.content


def test_a_held_composition_shows_when_it_lapses(
    acme: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    expires = timezone.now().replace(hour=12, minute=34, second=0, microsecond=0)
    composition = Composition.objects.create(
        tenant=acme, name="held", state=CompositionState.HELD, hold_expires_at=expires
    )
    page = client_as(alice).get(reverse("composer:composition_detail", args=[composition.pk]))
    assert b"Held until 12:34 UTC; applies or lapses." in page.content
    assert b'data-state="held"' in page.content
    assert b'id="decompose-button"' not in page.content


def test_read_only_members_see_a_notice_and_get_403_on_writes(
    synced: FabricManager,
    comps: dict[str, Composition],
    bob: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(bob)
    page = client.get(reverse("composer:composition_create"))
    assert page.status_code == 200
    assert b'id="read-only-notice"' in page.content and b'id="composition-form"' not in page.content
    data = {"name": "nope", **TWO_GPUS}
    assert client.post(reverse("composer:composition_create"), data).status_code == 403
    assert client.post(reverse("composer:composition_preview"), data).status_code == 403
    decompose = reverse("composer:composition_decompose", args=[comps["acme"].pk])
    assert client.post(decompose).status_code == 403
    assert Composition.objects.filter(name="nope").count() == 0
    assert not Job.objects.exists()


def test_outsiders_cannot_decompose(
    comps: dict[str, Composition], carol: Any, client_as: Callable[[Any], Client]
) -> None:
    decompose = reverse("composer:composition_decompose", args=[comps["acme"].pk])
    assert client_as(carol).post(decompose).status_code == 404
    assert not Job.objects.exists()


def test_a_request_from_the_form_creates_the_composition_and_redirects(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    form = client.get(reverse("composer:composition_create"))
    assert form.status_code == 200
    # Alice belongs to one tenant: no tenant choice.
    assert b'<select name="tenant"' not in form.content
    assert b'name="host"' not in form.content  # hosts are for operators
    key = form.context["form"].initial["idempotency_key"]
    data = {"name": "inference-1", "memory_gib": "256", "idempotency_key": key, **TWO_GPUS}
    response = client.post(reverse("composer:composition_create"), data, **HTMX)
    composition = Composition.objects.get(name="inference-1")
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("composer:composition_detail", args=[composition.pk])
    assert composition.tenant.slug == "acme" and composition.requested_by == alice
    assert composition.state == CompositionState.PLACING
    assert composition.allocations.count() == 3
    # A double submit returns the same composition.
    again = client.post(reverse("composer:composition_create"), data)
    assert again.status_code == 302 and Composition.objects.filter(name="inference-1").count() == 1
    page = client.get(again["Location"])
    assert b"inference-1" in page.content and b'id="composition-history"' in page.content
    assert page.context["job"] is not None


@pytest.mark.parametrize(
    ("data", "field", "text"),
    [
        ({"item_0_kind": "gpu", "item_0_count": "-1"}, "item_0_count", "at least 1"),
        (
            {"item_0_kind": "gpu", "item_0_count": "99"},
            "item_0_count",
            "More than the fabric holds",
        ),
        ({"item_0_kind": "gpu", "item_0_model": "Z9000"}, "item_0_model", "Unknown"),
        ({"memory_gib": "lots"}, "memory_gib", "must be a whole number"),
        ({"memory_gib": "99999"}, "memory_gib", "More than the fabric holds"),
        ({"item_1_kind": "gpu", "item_1_count": "1.5"}, "item_1_count", "whole number"),
        ({"item_0_kind": "gpu", "template": "999"}, "template", "valid choice"),
        ({}, "item_0_kind", "asks for nothing"),
        ({"item_0_kind": "gpu", "name": ""}, "name", "Give the composition a name"),
    ],
)
def test_bad_input_shows_field_errors_and_creates_nothing(
    data: dict[str, str],
    field: str,
    text: str,
    synced: FabricManager,
    alice: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(alice)
    payload = {"name": "bad", "policy": "none", **data}
    response = client.post(reverse("composer:composition_create"), payload, **HTMX)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors, errors
    assert text in " ".join(errors[field])
    assert f'id="error-{field}"'.encode() in response.content
    assert b"<html" not in response.content  # the form partial, for htmx to swap
    assert not Composition.objects.exists() and not Allocation.objects.exists()


def test_the_preview_shows_the_plan_and_writes_nothing(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    before = [m.objects.count() for m in (Composition, Allocation, Job, StateChange)]
    states = list(Device.objects.order_by("pk").values_list("state", flat=True))
    response = client.post(
        reverse("composer:composition_preview"), {"memory_gib": "256", **TWO_GPUS}, **HTMX
    )
    assert response.status_code == 200
    assert b'id="placement-plan"' in response.content
    assert b'id="placement-explanation"' in response.content and b" ns<" in response.content
    assert [m.objects.count() for m in (Composition, Allocation, Job, StateChange)] == before
    assert list(Device.objects.order_by("pk").values_list("state", flat=True)) == states


def test_the_preview_shows_a_rejection_with_its_funnel(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    data = {"max_latency_ns": "1", **TWO_GPUS}
    response = client_as(alice).post(reverse("composer:composition_preview"), data, **HTMX)
    assert response.status_code == 200
    assert b'id="placement-rejection"' in response.content
    assert b'id="rejection-funnel"' in response.content
    assert not Composition.objects.exists()


def test_a_bad_preview_redraws_the_form_with_the_error(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).post(
        reverse("composer:composition_preview"), {"memory_gib": "lots", "policy": "none"}, **HTMX
    )
    assert response.status_code == 400
    assert response["HX-Retarget"] == "#composition-form"
    assert b'id="error-memory_gib"' in response.content


def test_a_template_is_used_as_is(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    template = Template.objects.create(
        name="inference-2gpu-bigmem",
        slug="inference-2gpu-bigmem",
        spec={"items": [{"kind": "gpu", "count": 2}], "memory_gib": 512},
    )
    data = {"name": "from-template", "template": template.pk, "memory_gib": "lots"}
    response = client_as(alice).post(reverse("composer:composition_create"), data)
    assert response.status_code == 302
    composition = Composition.objects.get(name="from-template")
    assert composition.template == template and composition.spec["memory_gib"] == 512


def test_operators_pick_the_tenant_and_the_host(
    synced: FabricManager,
    acme: Any,
    globex: Any,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(admin_user)
    form = client.get(reverse("composer:composition_create"))
    assert b'<select name="tenant"' in form.content and b'name="host"' in form.content
    data = {"name": "for-globex", "tenant": globex.pk, "host": "999999", **TWO_GPUS}
    response = client.post(reverse("composer:composition_create"), data)
    assert response.status_code == 400
    assert "host" in response.context["form"].errors
    data["host"] = ""
    response = client.post(reverse("composer:composition_create"), data)
    assert response.status_code == 302
    assert Composition.objects.get(name="for-globex").tenant == globex


def test_with_several_managers_the_host_choices_name_each_hosts_manager(
    synced: FabricManager, acme: Any, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    """Two managers' worlds may name their hosts alike (the demo and its Redfish lab do)."""
    form = client_as(admin_user).get(reverse("composer:composition_create"))
    assert ">host-a-01</option>" in form.content.decode()  # one manager: names alone
    other = simulated_manager(name="lab", fabric="lab")
    inventory_sync(manager=other)
    page = client_as(admin_user).get(reverse("composer:composition_create")).content.decode()
    assert ">host-a-01 (sim)</option>" in page and ">host-a-01 (lab)</option>" in page


def test_decompose_refuses_a_composition_still_placing(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    client.post(reverse("composer:composition_create"), {"name": "c1", **TWO_GPUS})
    composition = Composition.objects.get(name="c1")
    url = reverse("composer:composition_decompose", args=[composition.pk])
    response = client.post(url, **HTMX)
    assert response["HX-Redirect"] == reverse("composer:composition_detail", args=[composition.pk])
    page = client.get(response["HX-Redirect"])
    assert b"still placing" in page.content
    assert not Job.objects.filter(kind="decompose").exists()


def test_a_ready_composition_is_decomposed(
    synced: FabricManager,
    alice: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = client_as(alice)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("composer:composition_create"), {"name": "c1", **TWO_GPUS})
    composition = Composition.objects.get(name="c1")
    assert composition.state == CompositionState.READY, composition.failure_reason
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("composer:composition_decompose", args=[composition.pk]))
    assert response.status_code == 302
    composition.refresh_from_db()
    assert composition.state == CompositionState.RELEASED
    trail = composition.state_changes.get(to_state="decomposing")
    assert trail.actor == alice and trail.remote_addr == "127.0.0.1"


def test_device_and_pool_pages_name_the_holder_only_to_those_who_may_see_it(
    synced: FabricManager,
    admin_user: Any,
    alice: Any,
    bob: Any,
    carol: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(alice)
    client.post(reverse("composer:composition_create"), {"name": "acme-gpus", **TWO_GPUS})
    allocation = Allocation.objects.select_related("device__pool").first()
    device = allocation.device
    device_url = reverse("fabric:device_detail", args=[device.pk])
    pool_url = reverse("composer:pool_detail", args=[device.pool.slug]) if device.pool else None
    for user, sees in ((admin_user, True), (alice, True), (bob, True), (carol, False)):
        client = client_as(user)
        page = client.get(device_url)
        assert page.status_code == 200
        assert (b"acme-gpus" in page.content) == sees, user
        assert (b"Acme</a>" in page.content) == (user == admin_user)
        if pool_url:
            pool_page = client.get(pool_url)
            assert (b"acme-gpus" in pool_page.content) == sees, user
