"""The size of the fabric is the operators' to know: a tenant's placement funnel shows its
host steps without the fabric's host counts, and a request beyond what the fabric holds is
refused without its totals — in the preview, the API, a stored rejection and the form."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import Sum
from django.urls import reverse

from composer.models import Composition
from fabric.models import Device, FabricManager, Host

GPUS = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 256}
TOO_BIG_A_HOST = {"items": [{"kind": "gpu", "count": 1}], "host_memory_gib": 60_000}
HTMX = {"HTTP_HX_REQUEST": "true"}
FORM = {"item_0_kind": "gpu", "item_0_count": "2", "memory_gib": "256", "policy": "none"}


def _host_steps(funnel: list[list[Any]]) -> list[list[Any]]:
    return [step for step in funnel if str(step[0]).startswith("hosts:")]


@pytest.mark.django_db
def test_a_tenants_funnel_has_no_host_counts_in_preview_api_or_stored_rejection(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    carol: Any,
    admin_user: Any,
    client_as: Any,
    api_as: Any,
) -> None:
    hosts = Host.objects.count()
    preview = "/api/v1/compositions/preview/"
    for tenant in (alice, carol):
        funnel = api_as(tenant).post(preview, {"spec": GPUS}, format="json").json()["funnel"]
        assert _host_steps(funnel) and all(s[1:] == [None, None] for s in _host_steps(funnel))
    body = {"spec": GPUS, "tenant": acme.slug}
    operators = api_as(admin_user).post(preview, body, format="json").json()["funnel"]
    assert _host_steps(operators)[0] == ["hosts: cores and memory", hosts, hosts]

    # A rejection, as answered (422) and as stored on the rejected composition.
    answer = api_as(alice).post(
        "/api/v1/compositions/", {"name": "x", "spec": TOO_BIG_A_HOST}, format="json"
    )
    assert answer.status_code == 422
    assert answer.json()["rejection"]["funnel"] == [["hosts: cores and memory", None, 0]]
    stored = api_as(alice).get(answer.json()["composition"]).json()["placement"]
    assert stored["funnel"] == [["hosts: cores and memory", None, 0]]
    rejected = Composition.objects.get(name="x")
    page = client_as(alice).get(reverse("composer:composition_detail", args=[rejected.pk]))
    drawn = page.content.decode()
    assert "hosts: cores and memory" in drawn and "none left" in drawn
    assert f'<td class="num">{hosts}</td>' not in drawn
    operator_view = api_as(admin_user).get(answer.json()["composition"]).json()["placement"]
    assert operator_view["funnel"] == [["hosts: cores and memory", hosts, 0]]


@pytest.mark.django_db
def test_the_preview_page_shows_a_tenant_whether_host_steps_passed_not_how_many(
    synced: FabricManager, acme: Any, alice: Any, admin_user: Any, client_as: Any
) -> None:
    hosts = Host.objects.count()
    form = {**FORM, "host_memory_gib": "60000"}
    url = reverse("composer:composition_preview")
    hers = client_as(alice).post(url, form, **HTMX).content.decode()
    assert 'id="rejection-funnel"' in hers and "none left" in hers
    assert f'<td class="num">{hosts}</td>' not in hers
    theirs = client_as(admin_user).post(url, {**form, "tenant": acme.pk}, **HTMX).content.decode()
    assert f'<td class="num">{hosts}</td>' in theirs


@pytest.mark.django_db
def test_a_request_beyond_the_fabric_is_refused_without_its_totals(
    synced: FabricManager, acme: Any, alice: Any, admin_user: Any, client_as: Any, api_as: Any
) -> None:
    gpus = Device.objects.filter(kind="gpu").count()
    gib = Device.objects.filter(kind="cxl_memory").aggregate(n=Sum("memory_gib"))["n"]
    figures = [str(gpus), f"{gib:,}"]
    for spec, field in (
        ({"items": [{"kind": "gpu", "count": gpus + 1}]}, "spec.items[0].count"),
        ({"items": [{"kind": "gpu", "count": 1}], "memory_gib": gib + 1}, "spec.memory_gib"),
    ):
        for user in (alice, admin_user):
            answer = api_as(user).post(
                "/api/v1/compositions/preview/",
                {"spec": spec, "tenant": acme.slug},
                format="json",
            )
            assert answer.status_code == 400 and answer.json()["field"] == field
            detail = answer.json()["detail"]
            assert "than the fabric holds" in detail, detail
            assert not any(f" {n} " in f" {detail} " for n in figures if n), detail

    form = {"name": "big", "item_0_kind": "gpu", "item_0_count": str(gpus + 1)}
    page = client_as(alice).post(reverse("composer:composition_create"), form, **HTMX)
    body = page.content.decode()
    assert "More than the fabric holds" in body and f"{gpus} GPUs" not in body
