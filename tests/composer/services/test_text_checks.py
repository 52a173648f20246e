"""Composition, template, quota and tenant names refuse what fabric.validators refuses, on
every path: the service (API and form alike) and the models' clean() (the admin)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from composer.errors import SpecError
from composer.models import Quota, Template, Tenant
from composer.services.compositions import composition_request
from fabric.models import FabricManager


@pytest.mark.django_db
def test_the_service_refuses_an_escape_in_a_composition_name_from_any_path(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    with pytest.raises(SpecError) as caught:
        composition_request(
            tenant=acme,
            requested_by=alice,
            spec={"items": [{"kind": "gpu", "count": 1}]},
            name="\x1b[31mred",
        )
    assert caught.value.field == "name"


@pytest.mark.django_db
def test_models_edited_in_the_admin_refuse_unprintable_names(acme: Tenant) -> None:
    template = Template(name="t\x1b", slug="t", description="\x07", spec={})
    with pytest.raises(ValidationError) as caught:
        template.full_clean()
    assert {"name", "description"} <= set(caught.value.message_dict)
    with pytest.raises(ValidationError) as caught:
        Quota(tenant=acme, kind="gpu", model="H\x1b").full_clean()
    assert "model" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        Tenant(name="Evil\u202eCorp", slug="evil").full_clean()
    assert "name" in caught.value.message_dict
