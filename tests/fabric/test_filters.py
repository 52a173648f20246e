"""One FilterSet per resource serves both its page and its API endpoint."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from fabric.choices import SwitchTier
from fabric.models import Switch
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


@pytest.mark.parametrize(
    ("page", "endpoint", "query", "expected"),
    [
        ("/fabric/switches/", "/api/v1/switches/", {"tier": "spine"}, {"sw-b"}),
        ("/fabric/hosts/", "/api/v1/hosts/", {"q": "host-a"}, {"host-a"}),
        ("/fabric/enclosures/", "/api/v1/enclosures/", {"kind": "cxl_memory_box"}, {"mem-a"}),
        ("/fabric/devices/", "/api/v1/devices/", {"kind": "cxl_memory"}, {"mem-a-0", "mem-a-1"}),
    ],
)
def test_a_filter_means_the_same_on_the_page_and_in_the_api(
    operator_client: Client, page: str, endpoint: str, query: dict[str, str], expected: set[str]
) -> None:
    fabric_small()
    Switch.objects.filter(name="sw-b").update(tier=SwitchTier.SPINE)

    api_names = {row["name"] for row in operator_client.get(endpoint, query).json()["results"]}
    page_response = operator_client.get(page, query)
    page_rows = page_response.context["page"].object_list

    assert api_names == expected
    assert {row.name for row in page_rows} == expected


@pytest.mark.parametrize(
    ("page", "endpoint", "query", "field"),
    [
        ("/fabric/switches/", "/api/v1/switches/", {"protocol": "token-ring"}, "protocol"),
        ("/fabric/hosts/", "/api/v1/hosts/", {"rack": "999999"}, "rack"),
        ("/fabric/devices/", "/api/v1/devices/", {"enclosure": "no-such-box"}, "enclosure"),
    ],
)
def test_a_bad_filter_value_is_a_400_naming_the_field_on_both(
    operator_client: Client, page: str, endpoint: str, query: dict[str, str], field: str
) -> None:
    fabric_small()

    api = operator_client.get(endpoint, query)
    html = operator_client.get(page, query)

    assert api.status_code == 400
    assert api.json()["field"] == field
    assert html.status_code == 400
    assert field in html.context["filter"].form.errors


HUGE = "99999999999999999999999"


@pytest.mark.parametrize(
    ("url", "status"),
    [
        (f"/fabric/devices/?manager={HUGE}", 400),
        (f"/fabric/hosts/?manager={HUGE}", 400),
        (f"/fabric/failure-domains/?manager={HUGE}", 400),
        (f"/api/v1/devices/?manager={HUGE}", 400),
        (f"/api/v1/links/?manager={HUGE}", 400),
        (f"/api/v1/failure-domains/?manager={HUGE}", 400),
        (f"/api/v1/failure-domains/impact/?ids=1,{HUGE}", 400),
        (f"/fabric/failure-domains/what-if/?ids=1,{HUGE}", 400),
    ],
)
def test_an_id_too_large_for_the_database_is_bad_input_not_a_crash(
    operator_client: Client, url: str, status: int
) -> None:
    fabric_small()

    assert operator_client.get(url).status_code == status
