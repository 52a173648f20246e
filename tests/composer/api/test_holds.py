"""Holds over the API: POST with hold_s, then apply or release; tenancy as everywhere."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job
from composer.services.holds import composition_hold
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/compositions/"
ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}


@pytest.fixture
def acme_held(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return composition_hold(tenant=acme, requested_by=alice, spec=ONE_GPU, name="h", ttl_s=600)


def test_alice_holds_with_hold_s_and_sees_its_expiry(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(
        URL, {"name": "h1", "spec": ONE_GPU, "hold_s": 300}, format="json"
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == "held" and body["hold_expires_at"] and body["job"] is None
    assert not Job.objects.exists()
    assert set(Device.objects.filter(kind="gpu").values_list("state", flat=True)) == {
        DeviceState.FREE,
        DeviceState.RESERVED,
    }


def test_a_hold_time_out_of_range_names_hold_s(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(URL, {"name": "h1", "spec": ONE_GPU, "hold_s": 5}, format="json")
    assert_error(response, 400, "invalid_spec", field="hold_s")
    assert not Composition.objects.exists()


def test_alice_applies_her_hold_with_202_and_the_compose_job(
    acme_held: Composition, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(f"{URL}{acme_held.pk}/apply/")
    assert response.status_code == 202, response.content
    job = Job.objects.get()
    assert job.kind == JobKind.COMPOSE and response["Location"].endswith(f"/jobs/{job.pk}/")
    acme_held.refresh_from_db()
    assert acme_held.state == CompositionState.PLACING


def test_alice_releases_her_hold_and_the_devices_are_free(
    acme_held: Composition, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(f"{URL}{acme_held.pk}/release/")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "released"
    assert set(Device.objects.filter(kind="gpu").values_list("state", flat=True)) == {
        DeviceState.FREE
    }
    again = api_as(alice).post(f"{URL}{acme_held.pk}/release/")
    assert_error(again, 409, "invalid_transition", field="state")


def test_bob_gets_403_and_carol_404_on_alices_hold(
    acme_held: Composition, bob: Any, carol: Any, api_as: Any
) -> None:
    for action in ("apply", "release"):
        assert api_as(bob).post(f"{URL}{acme_held.pk}/{action}/").status_code == 403
        assert api_as(carol).post(f"{URL}{acme_held.pk}/{action}/").status_code == 404
    acme_held.refresh_from_db()
    assert acme_held.state == CompositionState.HELD


def test_a_preview_with_hold_s_is_refused_naming_it(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(f"{URL}preview/", {"spec": ONE_GPU, "hold_s": 300}, format="json")
    assert_error(response, 400, "invalid_spec", field="hold_s")
    assert "A preview holds nothing" in response.content.decode()
