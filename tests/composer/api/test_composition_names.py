"""/api/v1/compositions/: names unique among a tenant's live compositions, errors in the
console's words, and self-heal on top of a template."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction

from composer.choices import CompositionState
from composer.models import Composition, Template
from fabric.models import FabricManager
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/compositions/"
ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}


def test_a_second_live_composition_with_the_same_name_is_409(
    synced: FabricManager, alice: Any, carol: Any, api_as: Any
) -> None:
    client = api_as(alice)
    assert (
        client.post(URL, {"name": "llm-serve", "spec": ONE_GPU}, format="json").status_code == 202
    )
    body = assert_error(
        client.post(URL, {"name": "llm-serve", "spec": ONE_GPU}, format="json"),
        409,
        "name_taken",
        field="name",
    )
    assert body["detail"] == (
        "Acme already has a composition named llm-serve (placing); choose another name, or "
        "decompose that one first."
    )
    assert Composition.objects.filter(name="llm-serve").count() == 1
    # Names are per tenant.
    assert (
        api_as(carol).post(URL, {"name": "llm-serve", "spec": ONE_GPU}, format="json").status_code
        == 202
    )


def test_the_detail_says_what_is_wrong_in_the_consoles_words(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    spec = {"items": [{"kind": "gpu", "count": 1}, {"kind": "gpu", "count": -1}]}
    body = assert_error(
        api_as(alice).post(URL, {"name": "x", "spec": spec}, format="json"),
        400,
        "invalid_spec",
        field="spec.items[1].count",
    )
    assert body["detail"] == "Device item 2: count must be at least 1 (got -1)."
    assert body["errors"] == {"spec.items[1].count": [body["detail"]]}


@pytest.mark.parametrize(("default", "explicit"), [(False, True), (True, False)])
def test_an_explicit_self_heal_overrides_the_templates(
    default: bool, explicit: bool, synced: FabricManager, alice: Any, api_as: Any
) -> None:
    template = Template(name="one-gpu", slug="one-gpu", spec={**ONE_GPU, "self_heal": default})
    template.full_clean()
    template.save()
    client = api_as(alice)
    body = {"name": "tpl", "template": "one-gpu", "spec": {"self_heal": explicit}}
    response = client.post(URL, body, format="json")
    assert response.status_code == 202, response.json()
    assert response.json()["spec"]["self_heal"] is explicit
    assert response.json()["spec"]["items"][0]["count"] == 1
    plain = client.post(URL, {"name": "tpl-2", "template": "one-gpu"}, format="json")
    assert plain.json()["spec"]["self_heal"] is default


def test_the_database_refuses_a_second_live_name(synced: FabricManager, acme: Any) -> None:
    """The unique index is the last word, whatever writes the row."""
    Composition.objects.create(tenant=acme, name="c", state=CompositionState.READY)
    Composition.objects.create(tenant=acme, name="c", state=CompositionState.RELEASED)
    Composition.objects.create(tenant=acme, name="c", state=CompositionState.DECOMPOSING)
    with pytest.raises(IntegrityError), transaction.atomic():
        Composition.objects.create(tenant=acme, name="c", state=CompositionState.REQUESTED)
