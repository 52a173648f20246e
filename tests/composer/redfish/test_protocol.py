"""What DMTF's Protocol Validator asked of the frame, checked without it (fast): the
OData-Version a client asks for, the schema a read is described by, `only` without a
value, a login POSTed to the collection's `Members`, and tokens of hexadecimal digits."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tests.factories.composer import PASSWORD

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"


def test_an_odata_version_other_than_4_0_is_refused_with_412() -> None:
    client = Client()
    assert client.get(f"{V1}/", HTTP_ODATA_VERSION="4.0").status_code == 200
    refused = client.get(f"{V1}/", HTTP_ODATA_VERSION="4.1")
    assert refused.status_code == 412
    assert refused.json()["error"]["code"].endswith(".HeaderInvalid")
    assert "OData-Version" in refused.json()["error"]["message"]


def test_a_read_names_the_json_schema_that_describes_it(alice: Any, redfish_as: Any) -> None:
    root = Client().get(f"{V1}/")
    assert root["Link"] == (
        "<https://redfish.dmtf.org/schemas/v1/ServiceRoot.v1_20_0.json>; rel=describedby"
    )
    assert Client().head(f"{V1}/")["Link"] == root["Link"]
    sessions = redfish_as(alice).get(f"{V1}/SessionService/Sessions")
    assert "/SessionCollection.json>" in sessions["Link"]


def test_only_takes_no_value(alice: Any, redfish_as: Any) -> None:
    session = redfish_as(alice)
    assert session.get(f"{V1}/SessionService/Sessions?only").status_code == 200
    refused = session.get(f"{V1}/SessionService/Sessions?only=foo")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"].endswith(".QueryParameterValueFormatError")


def test_a_login_posted_to_members_is_a_login_and_its_token_is_hexadecimal(alice: Any) -> None:
    answer = Client().post(
        f"{V1}/SessionService/Sessions/Members",
        {"UserName": alice.username, "Password": PASSWORD},
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    assert answer["Location"].startswith(f"{V1}/SessionService/Sessions/")
    assert re.fullmatch(r"[0-9a-f]{64}", answer["X-Auth-Token"])
    # Only a collection that creates takes a POST at its Members (the accounts are
    # read-only: "Members" is then an account's id, which takes no POST).
    other = Client().post(
        f"{V1}/AccountService/Accounts/Members",
        {},
        content_type="application/json",
        HTTP_X_AUTH_TOKEN=answer["X-Auth-Token"],
    )
    assert other.status_code == 405
