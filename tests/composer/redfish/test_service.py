"""The Redfish service's frame: who may read what, sessions, the error shape, queries,
ETags, the accounts and the message registries."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.test import Client

from composer.models import RedfishSession
from fabric.models import ChangeRecord
from fabric.redfish_render.messages import registries
from tests.composer.redfish.conftest import RedfishClient
from tests.factories.composer import PASSWORD
from tests.support.shared_data import shared_data

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"


def _error_ids(answer: Any) -> list[str]:
    body = answer.json()["error"]
    assert body["message"]
    return [info["MessageId"] for info in body["@Message.ExtendedInfo"]]


def test_the_root_and_the_odata_documents_are_open_and_everything_else_needs_a_login() -> None:
    client = Client()
    root = client.get(f"{V1}/")
    assert root.status_code == 200
    assert root["OData-Version"] == "4.0"
    body = root.json()
    assert body["@odata.id"] == f"{V1}/"
    assert body["ProtocolFeaturesSupported"]["ExpandQuery"]["MaxLevels"] == 1
    for name in ("Systems", "CompositionService", "SessionService", "AccountService"):
        assert body[name]["@odata.id"].startswith(V1)
    assert client.get("/redfish").json() == {"v1": f"{V1}/"}
    assert client.get(f"{V1}/odata").json()["value"][0]["url"] == f"{V1}/"
    assert b"edmx:Edmx" in client.get(f"{V1}/$metadata").content
    for path in ("SessionService", "AccountService/Accounts", "Registries", "nowhere"):
        refused = client.get(f"{V1}/{path}")
        assert refused.status_code == 401, path
        assert refused["WWW-Authenticate"].startswith("Basic")
        assert _error_ids(refused) == ["Base.1.22.1.NoValidSession"]


def test_a_session_opens_with_the_password_is_audited_and_ends_when_deleted(alice: Any) -> None:
    client = Client()
    wrong = client.post(
        f"{V1}/SessionService/Sessions",
        {"UserName": "alice", "Password": "nope"},
        content_type="application/json",
    )
    assert wrong.status_code == 401
    missing = client.post(
        f"{V1}/SessionService/Sessions", {"UserName": "alice"}, content_type="application/json"
    )
    assert missing.status_code == 400
    assert missing.json()["error"]["@Message.ExtendedInfo"][0]["RelatedProperties"] == [
        "#/Password"
    ]
    opened = client.post(
        f"{V1}/SessionService/Sessions",
        {"UserName": "alice", "Password": PASSWORD},
        content_type="application/json",
    )
    assert opened.status_code == 201
    token, location = opened["X-Auth-Token"], opened["Location"]
    assert opened.json()["UserName"] == "alice"
    stored = RedfishSession.objects.get()
    assert stored.token_sha256 != token and token not in json.dumps(opened.json())
    session = RedfishClient(Client(), token)
    assert session.get(f"{V1}/SessionService").status_code == 200
    assert [
        m["@odata.id"] for m in session.get(f"{V1}/SessionService/Sessions").json()["Members"]
    ] == [location]
    assert session.delete(location).status_code == 204
    assert session.get(f"{V1}/SessionService").status_code == 401
    actions = list(ChangeRecord.objects.filter(source="redfish").values_list("action", flat=True))
    assert sorted(actions) == ["added", "deleted"]


def test_http_basic_works_and_a_bad_header_is_a_401_not_a_500(alice: Any) -> None:
    client = Client()
    good = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert client.get(f"{V1}/Registries", HTTP_AUTHORIZATION=f"Basic {good}").status_code == 200
    for header in ("Basic !!!notbase64", "Basic " + base64.b64encode(b"\xff\xfe").decode()):
        assert client.get(f"{V1}/Registries", HTTP_AUTHORIZATION=header).status_code == 401
    assert client.get(f"{V1}/Registries", HTTP_X_AUTH_TOKEN="x" * 5000).status_code == 401


def test_a_tenant_sees_its_own_account_and_sessions_an_operator_all(
    alice: Any, carol: Any, admin_user: Any, redfish_as: Any
) -> None:
    as_alice = redfish_as(alice)
    redfish_as(carol)
    accounts = as_alice.get(f"{V1}/AccountService/Accounts").json()["Members"]
    assert accounts == [{"@odata.id": f"{V1}/AccountService/Accounts/{alice.pk}"}]
    assert as_alice.get(f"{V1}/AccountService/Accounts/{carol.pk}").status_code == 404
    mine = as_alice.get(f"{V1}/AccountService/Accounts/{alice.pk}").json()
    assert mine["RoleId"] == "Operator" and mine["Password"] is None
    assert len(as_alice.get(f"{V1}/SessionService/Sessions").json()["Members"]) == 1
    as_admin = redfish_as(admin_user)
    assert len(as_admin.get(f"{V1}/SessionService/Sessions").json()["Members"]) == 3
    assert len(as_admin.get(f"{V1}/AccountService/Accounts").json()["Members"]) == 3
    role = as_admin.get(f"{V1}/AccountService/Roles/Administrator").json()
    assert "ConfigureUsers" in role["AssignedPrivileges"]
    refused = as_alice.post(f"{V1}/AccountService/Accounts", {"UserName": "mallory"})
    assert refused.status_code == 405
    assert refused["Allow"] == "GET, HEAD"
    assert _error_ids(refused) == ["Base.1.22.1.OperationNotAllowed"]


def test_errors_name_the_problem_in_the_redfish_shape(alice: Any, redfish_as: Any) -> None:
    session = redfish_as(alice)
    missing = session.get(f"{V1}/Nowhere")
    assert missing.status_code == 404
    assert _error_ids(missing) == ["Base.1.22.1.ResourceMissingAtURI"]
    bad_top = session.get(f"{V1}/Registries?$top=ten")
    assert bad_top.status_code == 400
    info = bad_top.json()["error"]["@Message.ExtendedInfo"][0]
    assert info["MessageId"] == "Base.1.22.1.QueryParameterValueTypeError"
    assert info["MessageArgs"] == ["ten", "$top"]
    assert "$top" in bad_top.json()["error"]["message"]
    assert session.get(f"{V1}/Registries?$filter=Id eq 'Base'").status_code == 501
    assert session.get(f"{V1}/Registries?$expand=all").status_code == 400
    assert session.get(f"{V1}/Registries?unknown=1").status_code == 200
    malformed = session.client.post(
        f"{V1}/SessionService/Sessions", "{", content_type="application/json"
    )
    assert malformed.status_code == 400
    assert _error_ids(malformed) == ["Base.1.22.1.MalformedJSON"]


def test_etags_answer_304_and_queries_page_and_expand(alice: Any, redfish_as: Any) -> None:
    session = redfish_as(alice)
    first = session.get(f"{V1}/Registries")
    tag = first["ETag"]
    assert tag.startswith('W/"')
    assert session.get(f"{V1}/Registries", If_None_Match=tag).status_code == 304
    count = first.json()["Members@odata.count"]
    assert count >= 2
    page = session.get(f"{V1}/Registries?$top=1").json()
    assert len(page["Members"]) == 1 and page["Members@odata.count"] == count
    assert page["Members@odata.nextLink"].endswith("$skip=1")
    expanded = session.get(f"{V1}/Registries?$expand=.").json()
    assert expanded["Members"][0]["@odata.type"].startswith("#MessageRegistryFile.")
    head = session.client.head(f"{V1}/Registries", HTTP_X_AUTH_TOKEN=session.token)
    assert head.status_code == 200 and head.content == b"" and head["ETag"] == tag


def test_registries_are_served_and_every_message_is_dmtfs(alice: Any, redfish_as: Any) -> None:
    session = redfish_as(alice)
    for prefix, registry in registries().items():
        file = session.get(f"{V1}/Registries/{prefix}").json()
        location = file["Location"][0]
        assert location["PublicationUri"].endswith(f"{registry['Id']}.json")
        served = session.get(location["Uri"]).json()
        # As in the file, less the deprecated `Severity` (`MessageSeverity` says it).
        assert served["Messages"] == {
            key: {name: value for name, value in entry.items() if name != "Severity"}
            for key, entry in registry["Messages"].items()
        }
    folder = shared_data("redfish-registries")
    if folder is None:
        pytest.skip("shared/data/redfish-registries is absent: DMTF's registries not checked")
    for registry in registries().values():
        published = folder / f"{registry['Id']}.json"
        if not published.exists():
            continue
        whole = json.loads(published.read_text())["Messages"]
        for key, entry in registry["Messages"].items():
            assert whole[key] == entry, key
