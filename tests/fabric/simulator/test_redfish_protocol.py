"""The simulated world served as Redfish keeps the protocol's rules: sign-in, ETags and
If-Match, a block held by another system refused, `$expand` as the root advertises it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from fabric.simulator import store
from fabric.simulator.models import SimulatedBinding
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import simulated_manager

pytestmark = pytest.mark.django_db(transaction=True)
V1 = "/redfish/v1"


@pytest.fixture
def service() -> Iterator[tuple[str, requests.Session]]:
    """The served world's URL and a signed-in HTTP session."""
    simulated_manager(name="protocol", fabric="protocol")
    with serve_world("protocol") as url, requests.Session() as http:
        account = credentials()
        login = http.post(
            f"{url}{V1}/SessionService/Sessions",
            json={"UserName": account["username"], "Password": account["password"]},
            timeout=5,
        )
        assert login.status_code == 201 and login.headers["Location"]
        http.headers["X-Auth-Token"] = login.headers["X-Auth-Token"]
        yield url, http


def test_everything_but_the_root_and_metadata_needs_a_sign_in(
    service: tuple[str, requests.Session],
) -> None:
    url, _http = service
    for path in ("/redfish", V1, f"{V1}/odata", f"{V1}/$metadata"):
        assert requests.get(f"{url}{path}", timeout=5).status_code == 200, path
    assert requests.get(f"{url}{V1}/Systems", timeout=5).status_code == 401
    wrong = requests.post(
        f"{url}{V1}/SessionService/Sessions",
        json={"UserName": credentials()["username"], "Password": "wrong"},
        timeout=5,
    )
    assert wrong.status_code == 401 and "X-Auth-Token" not in wrong.headers
    account = credentials()
    basic = requests.get(
        f"{url}{V1}/Systems", auth=(account["username"], account["password"]), timeout=5
    )
    assert basic.status_code == 200 and basic.json()["Members@odata.count"] == 3


def test_a_stale_etag_is_refused_and_a_held_block_is_a_conflict(
    service: tuple[str, requests.Session],
) -> None:
    url, http = service
    systems = [m["@odata.id"] for m in http.get(f"{url}{V1}/Systems", timeout=5).json()["Members"]]
    blocks = http.get(f"{url}{V1}/CompositionService/ResourceBlocks", timeout=5).json()
    block = next(m["@odata.id"] for m in blocks["Members"] if "gpu" in m["@odata.id"])
    first = http.get(f"{url}{systems[0]}", timeout=5)
    body = {"Links": {"ResourceBlocks": [{"@odata.id": block}]}}

    stale = http.patch(f"{url}{systems[0]}", json=body, headers={"If-Match": 'W/"0"'}, timeout=5)
    assert stale.status_code == 412
    assert not SimulatedBinding.objects.exists()

    done = http.patch(
        f"{url}{systems[0]}", json=body, headers={"If-Match": first.headers["ETag"]}, timeout=5
    )
    assert done.status_code == 200 and done.headers["ETag"] != first.headers["ETag"]
    assert done.json()["Links"]["ResourceBlocks"] == [{"@odata.id": block}]
    held = http.get(f"{url}{block}", timeout=5).json()
    assert held["CompositionStatus"]["CompositionState"] == "Composed"
    assert held["Links"]["ComputerSystems"] == [{"@odata.id": systems[0]}]

    taken = http.patch(f"{url}{systems[1]}", json=body, timeout=5)
    assert taken.status_code == 409
    assert "already bound" in taken.json()["error"]["message"]
    assert SimulatedBinding.objects.count() == 1


def test_an_injected_transient_bind_fault_answers_503_and_binds_nothing(
    service: tuple[str, requests.Session],
) -> None:
    url, http = service
    store.operation_fault_set(
        fabric=store.fabric_get("protocol"), operation="bind", mode="transient"
    )
    system = http.get(f"{url}{V1}/Systems", timeout=5).json()["Members"][0]["@odata.id"]
    blocks = http.get(f"{url}{V1}/CompositionService/ResourceBlocks", timeout=5).json()
    body = {"Links": {"ResourceBlocks": [blocks["Members"][0]]}}
    assert http.patch(f"{url}{system}", json=body, timeout=5).status_code == 503
    assert not SimulatedBinding.objects.exists()
    assert http.patch(f"{url}{system}", json=body, timeout=5).status_code == 200


def test_expand_inlines_members_as_the_root_advertises(
    service: tuple[str, requests.Session],
) -> None:
    url, http = service
    root = http.get(f"{url}{V1}", timeout=5).json()
    assert root["ProtocolFeaturesSupported"]["ExpandQuery"]["NoLinks"] is True
    expanded = http.get(f"{url}{V1}/Systems", params={"$expand": ".($levels=1)"}, timeout=5)
    members = expanded.json()["Members"]
    assert len(members) == 3 and all(
        m["@odata.type"].startswith("#ComputerSystem.") for m in members
    )
    assert (
        http.get(f"{url}{V1}/Systems", params={"$expand": ".($levels=3)"}, timeout=5).status_code
        == 400
    )
