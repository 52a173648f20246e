"""Redfish tools with no Composer-specific code compose through Composer: DMTF's `redfish`
client library and OpenStack's `sushy` log in as alice (a tenant admin) against the demo
data centre, list the blocks and zones, compose each of the three standard ways, see the
system, decompose it, and find its blocks `Unused` again.

The three ways (DSP0266 "Composability", DSP2050):
- specific: POST /redfish/v1/Systems with `Links.ResourceBlocks` (a compute block and a
  GPU block of one zone);
- constrained: POST /redfish/v1/Systems with `@Redfish.RequestedCount` (the annotation
  DMTF's RedfishExtensions defines; the issue says "RequestCount") on a processor
  constraint, placement picking the blocks;
- the CompositionService.Compose action (at the target the service names), `RequestType`
  Apply, with a manifest stanza.
A long operation may answer 202 with a task monitor (`Location`), which is followed.
Composing needs PostgreSQL: on SQLite each test's own transaction begins IMMEDIATE, taking
the database's one write lock, so the served demo could not write until the test ended.
sushy has classes to read the CompositionService, ResourceBlocks and ResourceZones but
none to compose: it composes through its connector, as a sushy user would.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.redfish_demo import TENANT, DemoService

pytestmark = pytest.mark.django_db  # the demo is committed by the module's fixture

V1 = "/redfish/v1"
BLOCKS = f"{V1}/CompositionService/ResourceBlocks"
ZONES = f"{V1}/CompositionService/ResourceZones"
TASK_WAIT_S = 60


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    location: str


# One HTTP call as a client library makes it: (method, path, body) -> Reply.
Send = Callable[[str, str, dict[str, Any] | None], Reply]


def _finished(send: Send, reply: Reply) -> Reply:
    """`reply`, or, when it is a 202 with a task monitor, what the monitor finally says."""
    deadline = time.monotonic() + TASK_WAIT_S
    monitor = reply.location
    while reply.status == 202 and monitor:
        assert time.monotonic() < deadline, f"the task at {monitor} did not finish"
        time.sleep(0.2)
        reply = send("GET", monitor, None)
    return reply


def _state(send: Send, block: str) -> str:
    return str(send("GET", block, None).body["CompositionStatus"]["CompositionState"])


def _free_pair(send: Send) -> tuple[str, str]:
    """A compute block and a GPU block, both Unused, of one zone."""
    for zone in send("GET", ZONES, None).body["Members"]:
        blocks = send("GET", zone["@odata.id"], None).body["Links"]["ResourceBlocks"]
        compute = gpu = ""
        for link in blocks:
            block = send("GET", link["@odata.id"], None).body
            if block["CompositionStatus"]["CompositionState"] != "Unused":
                continue
            kinds = set(block["ResourceBlockType"])
            if kinds & {"Compute", "ComputerSystem"} and not compute:
                compute = block["@odata.id"]
            elif "Processor" in kinds and not gpu:
                gpu = block["@odata.id"]
        if compute and gpu:
            return compute, gpu
    raise AssertionError("no zone holds an unused compute block and an unused GPU block")


def _system_of(send: Send, reply: Reply) -> str:
    """The composed system's path, from a create's answer (Location or the body)."""
    reply = _finished(send, reply)
    assert reply.status in (200, 201), reply.body
    system = reply.location if "/Systems/" in reply.location else ""
    system = system or reply.body.get("@odata.id", "")
    if not system:  # a finished Task names what it made in its messages or payload
        for message in reply.body.get("Messages", []):
            system = next((a for a in message.get("MessageArgs", []) if "/Systems/" in a), "")
            if system:
                break
    assert "/Systems/" in system, reply.body
    return urlsplit(system).path  # a Location may be absolute


def _round_trip(send: Send, way: str, client: str) -> None:
    """Compose `way` (as `client`: the system is named after both, a composition's name
    being its tenant's own), see the system and its blocks composed, decompose, blocks
    Unused again."""
    compute, gpu = _free_pair(send)
    request: dict[str, Any]
    if way == "specific":
        request = {
            "Name": f"{client}-specific",
            "Links": {"ResourceBlocks": [{"@odata.id": compute}, {"@odata.id": gpu}]},
        }
        reply = send("POST", f"{V1}/Systems", request)
    elif way == "constrained":
        request = {  # as DMTF's public-constrained-composition mockup describes it
            "Name": f"{client}-constrained",
            "Processors": {"Members": [{"@Redfish.RequestedCount": 1, "ProcessorType": "GPU"}]},
        }
        reply = send("POST", f"{V1}/Systems", request)
    else:
        request = {
            "RequestFormat": "Manifest",
            "RequestType": "Apply",
            "Manifest": {
                "Description": "One GPU on one host",
                "Expansion": "None",
                "Stanzas": [
                    {
                        "StanzaType": "ComposeSystem",
                        "StanzaId": "one-gpu",
                        "Request": {
                            "Name": f"{client}-compose-action",
                            "Links": {
                                "ResourceBlocks": [{"@odata.id": compute}, {"@odata.id": gpu}]
                            },
                        },
                    }
                ],
            },
        }
        service = send("GET", f"{V1}/CompositionService", None).body
        reply = send("POST", service["Actions"]["#CompositionService.Compose"]["target"], request)
    done = _finished(send, reply)
    if way == "compose-action" and "Manifest" in done.body:  # the applied manifest
        assert done.status == 200, done.body
        system = done.body["Manifest"]["Stanzas"][0]["Response"]["@odata.id"]
    else:  # the system made (201), or the task that made it
        system = _system_of(send, done)
    seen = send("GET", system, None).body
    assert seen["SystemType"] == "Composed"
    used = [link["@odata.id"] for link in seen["Links"]["ResourceBlocks"]]
    assert used, seen
    if way != "constrained":
        assert {compute, gpu} <= set(used)
    states = {block: _state(send, block) for block in used}
    assert set(states.values()) <= {"Composed", "ComposedAndAvailable"}, states
    assert system in [m["@odata.id"] for m in send("GET", f"{V1}/Systems", None).body["Members"]]
    gone = _finished(send, send("DELETE", system, None))
    assert gone.status in (200, 204), gone.body
    assert send("GET", system, None).status == 404
    states = {block: _state(send, block) for block in used}
    assert set(states.values()) == {"Unused"}, states


WAYS = ["specific", "constrained", "compose-action"]


@pytest.fixture(scope="module")
def dmtf(demo_redfish: DemoService) -> Iterator[Any]:
    """DMTF's `redfish` client, logged in as alice with a session."""
    import redfish

    client = redfish.redfish_client(
        base_url=demo_redfish.url, username=TENANT, password=demo_redfish.password, timeout=30
    )
    client.login(auth="session")
    yield client
    client.logout()


def _dmtf_send(client: Any) -> Send:
    def send(method: str, path: str, body: dict[str, Any] | None) -> Reply:
        answer = getattr(client, method.lower())(path, **({"body": body} if body else {}))
        try:
            parsed = answer.dict if answer.text else {}
        except ValueError:
            parsed = {}
        return Reply(answer.status, parsed or {}, answer.getheader("Location") or "")

    return send


def test_dmtf_client_logs_in_with_a_session(dmtf: Any) -> None:
    own = dmtf.get(dmtf.get_session_location()).dict
    assert own["UserName"] == TENANT


def test_dmtf_client_lists_the_blocks_and_zones(dmtf: Any) -> None:
    root = dmtf.get(f"{V1}/").dict
    assert root["CompositionService"]["@odata.id"] == f"{V1}/CompositionService"
    blocks = dmtf.get(BLOCKS).dict
    assert blocks["Members@odata.count"] == len(blocks["Members"]) > 0
    assert dmtf.get(ZONES).dict["Members"]


@pytest.mark.parametrize("way", WAYS)
def test_dmtf_client_composes_and_decomposes(postgres: None, dmtf: Any, way: str) -> None:
    _round_trip(_dmtf_send(dmtf), way, "dmtf")


@pytest.fixture(scope="module")
def openstack(demo_redfish: DemoService) -> Iterator[Any]:
    """OpenStack's sushy, logged in as alice (a session, else HTTP Basic)."""
    sushy = pytest.importorskip("sushy")
    from sushy import auth

    root = sushy.Sushy(
        demo_redfish.url,
        auth=auth.SessionOrBasicAuth(username=TENANT, password=demo_redfish.password),
    )
    yield root
    root._conn.close()


def _sushy_send(root: Any) -> Send:
    from sushy import exceptions

    def send(method: str, path: str, body: dict[str, Any] | None) -> Reply:
        try:
            answer = getattr(root._conn, method.lower())(path, **({"data": body} if body else {}))
        except exceptions.HTTPError as error:
            return Reply(error.status_code, {"error": error.body or {}}, "")
        parsed = answer.json() if answer.content else {}
        return Reply(answer.status_code, parsed, answer.headers.get("Location", ""))

    return send


def test_sushy_logs_in_with_a_session(openstack: Any) -> None:
    assert openstack.redfish_version == "1.20.0"
    sessions = openstack.get_session_service().sessions
    # Its own (the one sushy opened, and the DMTF client's): a tenant sees no other's.
    assert {s.username for s in sessions.get_members()} == {TENANT}


def test_sushy_reads_the_composition_service(openstack: Any) -> None:
    """sushy's own classes read the service, its blocks and zones. Its CompositionService
    hands the collections a method instead of the path it returns (sushy 5.14:
    `resource_blocks` and `resource_zones` fail in urlparse), so the collections are built
    from the paths the service names, with sushy's classes."""
    from sushy.resources.compositionservice import constants, resourceblock, resourcezone

    service = openstack.get_composition_service()
    assert service.service_enabled
    blocks = resourceblock.ResourceBlockCollection(
        openstack._conn, service.json["ResourceBlocks"]["@odata.id"], root=openstack
    ).get_members()
    assert blocks
    states = {block.composition_status.composition_state for block in blocks}
    assert constants.CompositionState.UNUSED in states
    # (sushy maps ResourceBlockType as one value; Redfish makes it a list, which sushy
    # reads as None: not asserted.)
    assert all(block.identity and block.name for block in blocks)
    zones = resourcezone.ResourceZoneCollection(
        openstack._conn, service.json["ResourceZones"]["@odata.id"], root=openstack
    ).get_members()
    assert zones
    systems = openstack.get_system_collection().get_members()
    assert systems  # alice's own composed system, at least


@pytest.mark.parametrize("way", WAYS)
def test_sushy_composes_and_decomposes(postgres: None, openstack: Any, way: str) -> None:
    _round_trip(_sushy_send(openstack), way, "sushy")
