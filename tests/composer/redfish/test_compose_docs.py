"""The three ways to compose, and a share of a GPU, as docs/redfish.md shows them, against the
demo data centre of `make run` (`seed_demo` and its logins): each composes a ready system."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from composer.choices import CompositionState
from composer.models import Composition
from tests.composer.redfish.conftest import RedfishClient

pytestmark = pytest.mark.django_db
R = "/redfish/v1"
COMPOSE = f"{R}/CompositionService/Actions/CompositionService.Compose"
CONSTRAINED = {
    "Name": "trainer",
    "Processors": {
        "Members": [
            {"@Redfish.RequestedCount": 2, "ProcessorType": "GPU", "Model": "H100 PCIe 80GB"}
        ]
    },
    "Memory": {"Members": [{"@Redfish.RequestedCount": 1, "CapacityMiB": 1048576}]},
    "Oem": {"Composer": {"Policy": "switch", "SelfHeal": True}},
}
NOTEBOOK = {
    "Name": "notebook",
    "Processors": {
        "Members": [
            {"ProcessorType": "GPU", "Model": "L40S 48GB", "Oem": {"Composer": {"Share": 250}}}
        ]
    },
    "ProcessorSummary": {"CoreCount": 4},
}
PREVIEWED = {
    "Name": "inference",
    "Processors": [{"@Redfish.RequestedCount": 2, "ProcessorType": "GPU"}],
    "Memory": [{"CapacityMiB": 524288}],
}


@pytest.fixture
def demo_alice(db: None) -> RedfishClient:
    call_command("seed_demo", verbosity=0)
    client = Client()
    answer = client.post(
        f"{R}/SessionService/Sessions",
        {"UserName": "alice", "Password": settings.COMPOSER_DEMO_PASSWORD},
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    return RedfishClient(client, answer["X-Auth-Token"])


def ready(client: RedfishClient, answer: Any) -> Composition:
    assert answer.status_code == 202, answer.content
    done = client.get(answer["Location"])
    assert done.status_code == 201, done.content
    composition = Composition.objects.get(pk=int(done["Location"].rsplit("/", 1)[1]))
    assert composition.state == CompositionState.READY, composition.failure_reason
    return composition


def test_the_documented_examples_compose_on_the_demo(
    demo_alice: RedfishClient, django_capture_on_commit_callbacks: Any
) -> None:
    client = demo_alice
    with django_capture_on_commit_callbacks(execute=True):  # the job runs on leaving
        answer = client.post(f"{R}/Systems", CONSTRAINED)
    trainer = ready(client, answer)
    assert trainer.spec["self_heal"] and trainer.spec["memory_gib"] == 1024

    blocks = client.get(f"{R}/CompositionService/ResourceBlocks?$expand=.").json()["Members"]
    unused = [b for b in blocks if b["CompositionStatus"]["CompositionState"] == "Unused"]
    host = next(b for b in unused if b["Id"].startswith("host-"))
    gpu = next(b for b in unused if b["Id"].startswith("gpu-"))
    exact = {
        "Name": "exact",
        "Links": {"ResourceBlocks": [{"@odata.id": b["@odata.id"]} for b in (host, gpu)]},
    }
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"{R}/Systems", exact)
    ready(client, answer)

    action = {
        "RequestFormat": "Manifest",
        "RequestType": "Preview",
        "Manifest": {
            "Stanzas": [{"StanzaType": "ComposeSystem", "StanzaId": "1", "Request": PREVIEWED}]
        },
    }
    previewed = client.post(COMPOSE, action)
    assert previewed.status_code == 200, previewed.content
    reserved = client.post(COMPOSE, {**action, "RequestType": "PreviewReserve"})
    assert reserved.status_code == 200, reserved.content
    apply = {"RequestType": "Apply", "ReservationId": reserved.json()["ReservationId"]}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(COMPOSE, apply)
    ready(client, answer)

    with django_capture_on_commit_callbacks(execute=True):  # a share of a GPU
        answer = client.post(f"{R}/Systems", NOTEBOOK)
    notebook = ready(client, answer)
    [share] = client.get(f"{R}/Systems/{notebook.pk}").json()["Oem"]["Composer"]["Shares"]
    assert (share["Share"], share["SharesPerDevice"]) == (250, 1000)
