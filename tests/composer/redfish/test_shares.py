"""Shares of a GPU through the Redfish facade: a processor constraint asks for one
(`Oem.Composer.Share`, thousandths of one GPU), a system built on one says so (its
`Oem.Composer.Shares`, in the kind's parts), and the block of a partly shared GPU is
composed to the systems that hold it, each tenant counting and seeing only its own."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

import pytest
from django.test import Client

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from fabric.models import FabricManager
from tests.composer.redfish.test_compose import composed, error_ids, related
from tests.support.compose import composed as composed_for

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"
SYSTEMS = f"{V1}/Systems"
BLOCKS = f"{V1}/CompositionService/ResourceBlocks"
HOST = "host-a-01"
SCHEMA = f"{V1}/Schemas/Composer_v1.xml"


def gpu_share(share: Any, **member: Any) -> dict[str, Any]:
    """A constrained request for one processor constraint carrying a share."""
    constraint = {"ProcessorType": "GPU", "Oem": {"Composer": {"Share": share}}, **member}
    return {"Name": "notebook", "Processors": {"Members": [constraint]}}


def held(composition: Composition) -> Allocation:
    return composition.allocations.select_related("device").get(released_at__isnull=True)


def test_a_share_asked_through_redfish_composes_and_its_system_says_it_holds_it(
    synced: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = redfish_as(alice)
    _, composition = composed(client, gpu_share(250), django_capture_on_commit_callbacks)

    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    allocation = held(composition)
    assert allocation.share == 250 and allocation.device.kind == "gpu"
    system = client.get(f"{SYSTEMS}/{composition.pk}").json()
    block = f"{BLOCKS}/gpu-{allocation.device_id}"
    assert system["Oem"] == {
        "Composer": {
            "@odata.type": "#Composer.v1_0_0.ComputerSystem",
            "Shares": [
                {"ResourceBlock": {"@odata.id": block}, "Share": 250, "SharesPerDevice": 1000}
            ],
        }
    }
    assert f"a 250/1000 share of GPU {allocation.device.name}" in system["Description"]
    assert {"@odata.id": block} in system["Links"]["ResourceBlocks"]
    # A system holding whole devices only has no Oem section.
    _, whole = composed(
        client,
        {"Name": "whole", "Processors": [{"ProcessorType": "GPU"}]},
        django_capture_on_commit_callbacks,
    )
    assert "Oem" not in client.get(f"{SYSTEMS}/{whole.pk}").json()


@pytest.mark.parametrize(
    ("member", "pointer"),
    [
        ({"Share": 1000}, "#/Processors/Members/0/Oem/Composer/Share"),
        ({"Share": 0}, "#/Processors/Members/0/Oem/Composer/Share"),
        ({"Share": 250, "ProcessorType": "FPGA"}, "#/Processors/Members/0/Oem/Composer/Share"),
        (
            {"Share": 250, "@Redfish.RequestedCount": 2},
            "#/Processors/Members/0/@Redfish.RequestedCount",
        ),
    ],
)
def test_a_share_composer_cannot_give_is_refused_naming_the_property(
    synced: FabricManager, alice: Any, redfish_as: Any, member: dict[str, Any], pointer: str
) -> None:
    share = member.pop("Share")
    answer = redfish_as(alice).post(SYSTEMS, gpu_share(share, **member))
    assert answer.status_code == 400, answer.content
    assert error_ids(answer)[0].startswith("Base.PropertyValue")
    assert related(answer) == [pointer]
    assert not Composition.objects.exists()


def test_the_block_of_a_partly_shared_gpu_is_composed_to_the_systems_each_caller_may_see(
    synced: FabricManager,
    alice: Any,
    carol: Any,
    admin_user: Any,
    acme: Any,
    globex: Any,
    redfish_as: Any,
) -> None:
    spec = {"items": [{"kind": "gpu", "share": 250}], "host": HOST}
    mine = composed_for(tenant=acme, user=alice, name="mine", spec=spec)
    theirs = composed_for(
        tenant=globex,
        user=carol,
        name="theirs",
        spec={**spec, "items": [{"kind": "gpu", "share": 500}]},
    )
    gpu = held(mine).device
    assert held(theirs).device == gpu  # one GPU, shared on one host by two tenants
    block = f"{BLOCKS}/gpu-{gpu.pk}"
    mine_path, theirs_path = f"{SYSTEMS}/{mine.pk}", f"{SYSTEMS}/{theirs.pk}"

    def seen(user: Any) -> dict[str, Any]:
        answer = redfish_as(user).get(block)
        assert answer.status_code == 200, answer.content
        return dict(answer.json())

    operator = seen(admin_user)
    status = operator["CompositionStatus"]
    assert status["CompositionState"] == "ComposedAndAvailable"  # 250/1000 still free
    assert status["SharingCapable"] is True and status["SharingEnabled"] is True
    assert "MaxCompositions" not in status
    assert status["NumberOfCompositions"] == 2
    assert operator["Links"]["ComputerSystems"] == [
        {"@odata.id": mine_path},
        {"@odata.id": theirs_path},
    ]
    assert operator["Description"].endswith(": shared, 250/1000 free.")
    # Each tenant: composed, to its own system alone.
    for user, path in ((alice, mine_path), (carol, theirs_path)):
        body = seen(user)
        assert body["CompositionStatus"]["CompositionState"] == "ComposedAndAvailable"
        assert body["CompositionStatus"]["NumberOfCompositions"] == 1
        assert body["Links"]["ComputerSystems"] == [{"@odata.id": path}]
        assert "Chassis" not in body["Links"]
    assert redfish_as(carol).get(mine_path).status_code == 404

    last = composed_for(tenant=acme, user=alice, name="last", spec=spec)
    assert held(last).device == gpu
    assert seen(admin_user)["CompositionStatus"]["CompositionState"] == "Composed"  # full
    alices = seen(alice)
    assert alices["CompositionStatus"]["CompositionState"] == "Composed"
    assert alices["CompositionStatus"]["NumberOfCompositions"] == 2
    assert theirs_path not in str(alices)


def test_the_oem_extensions_schema_is_referenced_from_metadata_and_served_openly() -> None:
    client = Client()  # no credentials, as for $metadata
    metadata = ElementTree.fromstring(client.get(f"{V1}/$metadata").content)
    edmx = "{http://docs.oasis-open.org/odata/ns/edmx}"
    ours = [r for r in metadata.iter(f"{edmx}Reference") if r.get("Uri") == SCHEMA]
    assert [i.get("Namespace") for r in ours for i in r.iter(f"{edmx}Include")] == [
        "Composer",
        "Composer.v1_0_0",
    ]
    answer = client.get(SCHEMA)
    assert answer.status_code == 200 and answer["Content-Type"].startswith("application/xml")
    schema = ElementTree.fromstring(answer.content)
    edm = "{http://docs.oasis-open.org/odata/ns/edm}"
    types = {
        f"{s.get('Namespace')}.{t.get('Name')}": {p.get("Name") for p in t}
        for s in schema.iter(f"{edm}Schema")
        for t in s.iter(f"{edm}ComplexType")
    }
    # What a system's Oem.Composer holds: "#Composer.v1_0_0.ComputerSystem".
    assert {"Shares"} <= types["Composer.v1_0_0.ComputerSystem"]
    assert {"Share", "SharesPerDevice", "ResourceBlock"} <= types["Composer.v1_0_0.Share"]
