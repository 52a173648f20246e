"""Asking for a share of a GPU: the spec item's `share` (validation naming the field), the
API and its schema, the console's GPU share field, quotas counting a share as its fraction
of a GPU."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.api.serializers.spec import SPEC_SCHEMA
from composer.errors import SpecError
from composer.models import Composition, Quota
from composer.selectors.quotas import quota_usage
from composer.specs import spec_normalise, spec_to_request
from fabric.models import FabricManager
from tests.support.api import assert_error
from tests.support.compose import composed

QUARTER = {"items": [{"kind": "gpu", "share": 250}]}


def test_a_share_item_is_normalised_and_becomes_a_share_of_one_device() -> None:
    spec = spec_normalise({"items": [{"kind": "gpu", "share": "250", "model": "H100"}]})
    assert spec["items"] == [
        {"kind": "gpu", "model": "H100", "count": 1, "minima": {}, "share": 250}
    ]
    [item] = spec_to_request(spec, host=None, tenant=None).items
    assert (item.kind, item.count, item.share, item.model) == ("gpu", 1, 250, "H100")
    whole = spec_normalise({"items": [{"kind": "gpu", "count": 2}]})
    assert "share" not in whole["items"][0]  # whole devices are stored as before


@pytest.mark.parametrize(
    ("item", "field", "words"),
    [
        ({"kind": "gpu", "share": 1000}, "items[0].share", "1000 or more is whole GPUs"),
        ({"kind": "gpu", "share": 0}, "items[0].share", "Share must be at least 1."),
        ({"kind": "gpu", "share": "half"}, "items[0].share", "Share must be a whole number."),
        ({"kind": "gpu", "share": 250, "count": 2}, "items[0].count", "Count must be 1 with a"),
        ({"kind": "nvme", "share": 250}, "items[0].share", "NVMe drives are taken whole"),
    ],
)
def test_a_bad_share_names_its_field(item: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec_normalise({"items": [item]})
    assert caught.value.field == field
    assert words in caught.value.field_message


def test_the_api_schema_offers_a_share_on_device_items() -> None:
    share = SPEC_SCHEMA["properties"]["items"]["items"]["properties"]["share"]
    assert (share["type"], share["minimum"], share["maximum"]) == ("integer", 1, 999)


@pytest.mark.django_db
def test_the_api_refuses_a_bad_share_naming_the_field(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    client = api_as(alice)
    body = {"name": "x", "spec": {"items": [{"kind": "gpu", "share": 1000}]}}
    assert_error(client.post("/api/v1/compositions/", body, format="json"), 400,
                 "invalid_spec", field="spec.items[0].share")  # fmt: skip
    body = {"name": "x", "spec": {"items": [{"kind": "gpu", "share": "a lot"}]}}
    assert_error(client.post("/api/v1/compositions/", body, format="json"), 400,
                 "invalid_spec", field="spec.items[0].share")  # fmt: skip
    assert not Composition.objects.exists()


@pytest.mark.django_db
def test_the_api_composes_a_share(
    synced: FabricManager, alice: Any, api_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_as(alice).post(
            "/api/v1/compositions/", {"name": "q", "spec": QUARTER}, format="json"
        )
    assert answer.status_code == 202, answer.content
    composition = Composition.objects.get()
    assert composition.state == "ready", composition.failure_reason
    assert [a.share for a in composition.allocations.all()] == [250]


@pytest.mark.django_db
def test_the_form_s_gpu_share_field_asks_for_a_share_and_shows_its_errors(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    page = client.get(reverse("composer:composition_create")).content.decode()
    assert 'name="gpu_share"' in page and "GPU share (thousandths)" in page
    refused = client.post(
        reverse("composer:composition_create"), {"name": "x", "policy": "none", "gpu_share": "1000"}
    )
    assert refused.status_code == 400
    assert refused.context["form"].errors["gpu_share"][0].startswith("A share is 1 to 999")
    client.post(
        reverse("composer:composition_create"), {"name": "y", "policy": "none", "gpu_share": "300"}
    )
    composition = Composition.objects.get(name="y")
    assert composition.spec["items"] == [
        {"kind": "gpu", "model": None, "count": 1, "minima": {}, "share": 300}
    ]


@pytest.mark.django_db
def test_a_share_counts_against_a_gpu_quota_as_its_fraction(
    synced: FabricManager, acme: Any, alice: Any, api_as: Any
) -> None:
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=1)
    composed(tenant=acme, user=alice, name="q", spec={"items": [{"kind": "gpu", "share": 750}]})
    assert quota_usage([quota])[quota.pk]["count"] == 0.75
    body = {"name": "more", "spec": {"items": [{"kind": "gpu", "share": 500}]}}
    answer = assert_error(
        api_as(alice).post("/api/v1/compositions/", body, format="json"),
        409,
        "quota_exceeded",
        field="spec.items[0].count",
    )
    assert "by 0.25: 1 allowed, 0.75 in use, 0.5 asked" in answer["detail"]
