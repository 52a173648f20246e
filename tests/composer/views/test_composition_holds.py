"""A held composition's page: "Apply now" and "Release hold" for those who may write,
through the services the API uses, audited; nothing for read-only members or others."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job, StateChange
from composer.services.holds import composition_hold
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager

pytestmark = pytest.mark.django_db

ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}


@pytest.fixture
def held(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return composition_hold(tenant=acme, requested_by=alice, spec=ONE_GPU, name="h", ttl_s=600)


def page(client: Client, composition: Composition) -> str:
    response = client.get(reverse("composer:composition_detail", args=[composition.pk]))
    assert response.status_code == 200
    return response.content.decode()


def said(response: Any) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_alice_sees_both_buttons_as_csrf_forms(
    held: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    html = page(client_as(alice), held)
    for form, url in (
        ("hold-apply-form", "composition_hold_apply"),
        ("hold-release-form", "composition_hold_release"),
    ):
        match = re.search(
            rf'<form method="post" action="([^"]+)"[^>]*id="{form}">(.*?)</form>', html
        )
        assert match is not None, form
        assert match.group(1) == reverse(f"composer:{url}", args=[held.pk])
        assert "csrfmiddlewaretoken" in match.group(2)
    assert "Apply now" in html and "Release hold" in html


def test_release_hold_gives_the_devices_back_and_is_audited(
    held: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    device = held.allocations.get().device
    response = client_as(alice).post(
        reverse("composer:composition_hold_release", args=[held.pk]), REMOTE_ADDR="10.1.2.3"
    )
    assert response.status_code == 302
    assert said(response) == ["Released the hold on h; its devices are free again."]
    held.refresh_from_db()
    assert held.state == CompositionState.RELEASED
    assert Device.objects.get(pk=device.pk).state == DeviceState.FREE
    last = StateChange.objects.filter(composition=held).last()
    assert last is not None
    assert (last.reason, last.actor, last.remote_addr) == ("Hold let go", alice, "10.1.2.3")
    assert "hold-release-form" not in page(client_as(alice), held)


def test_apply_now_queues_the_compose_job(
    held: Composition, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).post(
        reverse("composer:composition_hold_apply", args=[held.pk]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and response["HX-Redirect"].endswith(f"/{held.pk}/")
    job = Job.objects.get()
    assert job.kind == JobKind.COMPOSE
    assert said(response) == [f"Composing h from its hold (job {job.pk})."]
    last = StateChange.objects.filter(composition=held).last()
    assert last is not None and (last.reason, last.actor) == ("Hold applied: composing", admin_user)


def test_a_hold_no_longer_held_is_a_message_not_an_error(
    held: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    client.post(reverse("composer:composition_hold_release", args=[held.pk]))
    response = client.post(reverse("composer:composition_hold_apply", args=[held.pk]))
    assert response.status_code == 302
    assert said(response)[-1] == (
        "Could not apply the hold on h: Composition h is released, not held; only a hold "
        "can be applied."
    )


def test_decompose_of_a_hold_points_to_its_buttons(
    held: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).post(reverse("composer:composition_decompose", args=[held.pk]))
    assert (
        'release the hold instead ("Release hold" on its page), or apply it first ("Apply now")'
        in said(response)[-1]
    )


def test_bob_sees_no_buttons_and_gets_403_and_carol_404(
    held: Composition, bob: Any, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    assert "hold-release-form" not in page(client_as(bob), held)
    for name in ("composition_hold_apply", "composition_hold_release"):
        url = reverse(f"composer:{name}", args=[held.pk])
        assert client_as(bob).post(url).status_code == 403
        assert client_as(carol).post(url).status_code == 404
        assert client_as(bob).get(url).status_code == 405
    held.refresh_from_db()
    assert held.state == CompositionState.HELD


def test_the_forms_need_the_csrf_token(held: Composition, alice: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(reverse("composer:composition_hold_release", args=[held.pk]))
    assert response.status_code == 403
    assert Composition.objects.get(pk=held.pk).state == CompositionState.HELD
