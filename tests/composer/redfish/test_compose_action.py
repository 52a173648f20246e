"""The CompositionService.Compose action: Preview (nothing written), PreviewReserve (a hold
listed in CompositionReservations) and Apply (of a manifest, or of a reservation)."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from fabric.models import FabricManager
from tests.composer.redfish.test_compose import TWO_H100_AND_A_TIB, error_ids, related

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"
COMPOSE = f"{V1}/CompositionService/Actions/CompositionService.Compose"
RESERVATIONS = f"{V1}/CompositionService/CompositionReservations"


def action(kind: str, request: dict[str, Any] = TWO_H100_AND_A_TIB) -> dict[str, Any]:
    return {
        "RequestFormat": "Manifest",
        "RequestType": kind,
        "Manifest": {
            "Stanzas": [{"StanzaType": "ComposeSystem", "StanzaId": "one", "Request": request}]
        },
    }


def test_preview_answers_the_plan_and_its_explanation_and_writes_nothing(
    synced: FabricManager, bob: Any, redfish_as: Any
) -> None:
    answer = redfish_as(bob).post(COMPOSE, action("Preview"))  # read-only members may preview
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["RequestFormat"], body["RequestType"]) == ("Manifest", "Preview")
    stanza = body["Manifest"]["Stanzas"][0]
    assert stanza["StanzaId"] == "one" and stanza["Request"] == TWO_H100_AND_A_TIB
    plan = stanza["Response"]["Oem"]["Composer"]["Plan"]
    assert plan["ok"] is True and plan["explanation"]
    assert len(stanza["Response"]["Links"]["ResourceBlocks"]) == 4
    assert "device:" not in answer.content.decode()
    assert not Composition.objects.exists() and not Allocation.objects.exists()


def test_an_action_error_points_into_the_stanza(
    synced: FabricManager, alice: Any, redfish_as: Any
) -> None:
    client = redfish_as(alice)
    bad = client.post(COMPOSE, action("Preview", {"Processors": [{"ProcessorType": "DSP"}]}))
    assert bad.status_code == 400
    assert related(bad) == ["#/Manifest/Stanzas/0/Request/Processors/0/ProcessorType"]
    unknown = client.post(COMPOSE, {**action("Preview"), "RequestType": "Maybe"})
    assert error_ids(unknown) == ["Base.ActionParameterValueNotInList"]
    missing = client.post(COMPOSE, {"RequestFormat": "Manifest"})
    assert error_ids(missing) == ["Base.ActionParameterMissing"]


def test_preview_reserve_holds_the_blocks_until_apply_composes_them(
    synced: FabricManager,
    alice: Any,
    carol: Any,
    redfish_as: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = redfish_as(alice)
    reserved = client.post(
        COMPOSE,
        action(
            "PreviewReserve",
            {**TWO_H100_AND_A_TIB, "Oem": {"Composer": {"ReservationSeconds": 120}}},
        ),
    )
    assert reserved.status_code == 200, reserved.content
    reservation = reserved.json()["ReservationId"]
    held = Composition.objects.get(pk=int(reservation))
    assert held.state == CompositionState.HELD and held.hold_expires_at is not None
    path = f"{RESERVATIONS}/{reservation}"
    assert reserved["Location"] == path
    listed = client.get(RESERVATIONS).json()
    assert [m["@odata.id"] for m in listed["Members"]] == [path]
    body = client.get(path).json()
    assert len(body["ReservedResourceBlocks"]) == 4 and body["Client"] == "alice"
    assert client.get(path)["ETag"] == client.get(path)["ETag"]
    # The held blocks are no one else's: the same request again finds nothing.
    again = client.post(COMPOSE, action("PreviewReserve", {**TWO_H100_AND_A_TIB, "Name": "b"}))
    assert again.status_code == 409
    assert error_ids(again) == ["Composition.NoResourceMatch"]
    # Carol sees nothing of it.
    assert redfish_as(carol).get(RESERVATIONS).json()["Members"] == []
    assert redfish_as(carol).get(path).status_code == 404
    outsider = redfish_as(carol).post(
        COMPOSE, {"RequestType": "Apply", "ReservationId": reservation}
    )
    assert outsider.status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        applied = client.post(COMPOSE, {"RequestType": "Apply", "ReservationId": reservation})
    assert applied.status_code == 202, applied.content
    held.refresh_from_db()
    assert held.state == CompositionState.READY, held.failure_reason
    assert client.get(applied["Location"]).status_code == 201
    assert client.get(path).status_code == 404


def test_a_reservation_let_go_frees_its_blocks_and_honours_if_match(
    synced: FabricManager, alice: Any, bob: Any, redfish_as: Any
) -> None:
    client = redfish_as(alice)
    reservation = client.post(COMPOSE, action("PreviewReserve")).json()["ReservationId"]
    path = f"{RESERVATIONS}/{reservation}"
    assert redfish_as(bob).delete(path).status_code == 403
    assert client.delete(path, If_Match='W/"stale"').status_code == 412
    assert client.delete(path, If_Match=client.get(path)["ETag"]).status_code == 204
    assert Composition.objects.get().state == CompositionState.RELEASED
    assert not Allocation.objects.filter(released_at__isnull=True).exists()


def test_apply_of_a_manifest_composes_as_post_systems_does(
    synced: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = redfish_as(alice)
    with django_capture_on_commit_callbacks(execute=True):
        applied = client.post(COMPOSE, action("Apply"))
    assert applied.status_code == 202, applied.content
    done = client.get(applied["Location"])
    assert done.status_code == 201
    assert Composition.objects.get().state == CompositionState.READY
