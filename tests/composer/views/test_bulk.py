"""Bulk decompose and bulk acknowledge: a confirmation naming each one, then all of them
(decompose: or none), each audited as its own; members only ever touch their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job, StateChange
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert, ChangeRecord
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db

DECOMPOSE = reverse("composer:compositions_decompose_bulk")
ACKNOWLEDGE = reverse("composer:alerts_acknowledge_bulk")


@pytest.fixture
def boxes(acme: Any, globex: Any, alice: Any, carol: Any) -> dict[str, Composition]:
    def box(tenant: Any, name: str, state: str = CompositionState.READY) -> Composition:
        return Composition.objects.create(tenant=tenant, name=name, state=state)

    return {
        "a1": box(acme, "acme-1"),
        "a2": box(acme, "acme-2"),
        "binding": box(acme, "acme-binding", CompositionState.BINDING),
        "g1": box(globex, "globex-1"),
    }


def _ids(*rows: Any) -> list[str]:
    return [str(r.pk) for r in rows]


def test_a_member_confirms_then_decomposes_several_of_their_own(
    client_as: Callable[[Any], Client], alice: Any, boxes: dict[str, Composition]
) -> None:
    client = client_as(alice)
    confirm = client.get(
        DECOMPOSE, {"ids": _ids(boxes["a1"], boxes["a2"]), "next": "/compositions/?state=ready"}
    )
    assert confirm.status_code == 200
    body = confirm.content.decode()
    assert "Decompose 2 compositions?" in body and "acme-1" in body and "acme-2" in body
    done = client.post(
        DECOMPOSE,
        {"ids": _ids(boxes["a1"], boxes["a2"]), "next": "/compositions/?state=ready"},
        follow=True,
    )
    assert done.redirect_chain == [("/compositions/?state=ready", 302)]
    assert "Decomposing 2 compositions." in done.content.decode()
    for key in ("a1", "a2"):
        boxes[key].refresh_from_db()
        assert Job.objects.filter(kind=JobKind.DECOMPOSE, target_id=boxes[key].pk).exists()
        change = StateChange.objects.filter(composition=boxes[key]).latest("at")
        assert (change.to_state, change.actor) == (CompositionState.DECOMPOSING, alice)


def test_one_that_cannot_go_stops_them_all_and_is_named(
    client_as: Callable[[Any], Client], alice: Any, boxes: dict[str, Composition]
) -> None:
    response = client_as(alice).post(
        DECOMPOSE, {"ids": _ids(boxes["a1"], boxes["binding"])}, follow=True
    )
    body = response.content.decode()
    assert "acme-binding is still binding" in body and "Nothing was decomposed." in body
    boxes["a1"].refresh_from_db()
    assert boxes["a1"].state == CompositionState.READY
    assert not Job.objects.filter(kind=JobKind.DECOMPOSE).exists()


def test_another_tenants_composition_reads_as_missing(
    client_as: Callable[[Any], Client], alice: Any, boxes: dict[str, Composition]
) -> None:
    response = client_as(alice).post(DECOMPOSE, {"ids": _ids(boxes["a1"], boxes["g1"])})
    assert response.status_code == 400
    assert f"Compositions: No composition with id {boxes['g1'].pk}." in response.content.decode()
    boxes["g1"].refresh_from_db()
    assert boxes["g1"].state == CompositionState.READY


def test_read_only_members_cannot_decompose(
    client_as: Callable[[Any], Client], bob: Any, boxes: dict[str, Composition]
) -> None:
    assert client_as(bob).post(DECOMPOSE, {"ids": _ids(boxes["a1"])}).status_code == 403
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({}, "Compositions: Choose at least one composition."),
        ({"ids": "x"}, "Compositions: Not composition ids: x."),
    ],
)
def test_bad_ids_are_a_400_naming_the_field(
    client_as: Callable[[Any], Client], alice: Any, params: dict[str, str], words: str
) -> None:
    response = client_as(alice).get(DECOMPOSE, params)
    assert response.status_code == 400
    assert words in response.content.decode()


def _alert(small: SmallFabric, i: int) -> Alert:
    now = timezone.now()
    return Alert.objects.create(
        manager=small.manager,
        source_type=AlertSource.DEVICE,
        source_id=small.gpus[i].pk,
        source_name=small.gpus[i].name,
        rule=rules.TEMPERATURE,
        severity=AlertSeverity.WARNING,
        message=f"{small.gpus[i].name} runs hot",
        opened_at=now,
        last_seen_at=now,
    )


def test_an_operator_acknowledges_several_alerts(
    client_as: Callable[[Any], Client], admin_user: Any, small: SmallFabric
) -> None:
    alerts = [_alert(small, i) for i in range(3)]
    client = client_as(admin_user)
    confirm = client.get(ACKNOWLEDGE, {"ids": _ids(*alerts)})
    assert "Acknowledge 3 alerts?" in confirm.content.decode()
    done = client.post(ACKNOWLEDGE, {"ids": _ids(*alerts)}, follow=True)
    assert "3 alerts acknowledged." in done.content.decode()
    assert Alert.objects.filter(acknowledged_by=admin_user).count() == 3
    assert ChangeRecord.objects.filter(target_type="alert").count() == 3
    again = client.post(ACKNOWLEDGE, {"ids": _ids(*alerts)}, follow=True)
    assert "0 alerts acknowledged. 3 already were." in again.content.decode()


def test_members_do_not_acknowledge(
    client_as: Callable[[Any], Client], alice: Any, small: SmallFabric
) -> None:
    alert = _alert(small, 0)
    assert client_as(alice).post(ACKNOWLEDGE, {"ids": _ids(alert)}).status_code == 403
    alert.refresh_from_db()
    assert alert.acknowledged_at is None


def test_the_lists_offer_ticks_only_where_the_viewer_may_act(
    client_as: Callable[[Any], Client],
    admin_user: Any,
    alice: Any,
    bob: Any,
    small: SmallFabric,
    boxes: dict[str, Composition],
) -> None:
    _alert(small, 0)
    compositions = reverse("composer:composition_list")
    alerts = reverse("composer:alert_list")
    operator = client_as(admin_user)
    assert 'id="composition-bulk-form"' in operator.get(compositions).content.decode()
    assert 'id="alert-bulk-form"' in operator.get(alerts).content.decode()
    member = client_as(alice).get(compositions).content.decode()
    assert 'id="composition-bulk-form"' in member
    assert f'name="ids" value="{boxes["a1"].pk}"' in member
    assert 'id="alert-bulk-form"' not in client_as(alice).get(alerts).content.decode()
    read_only = client_as(bob).get(compositions).content.decode()
    assert 'id="composition-bulk-form"' not in read_only and 'name="ids"' not in read_only
