"""A composed system while its composition resizes: Updating, still a system, not
decomposable, and no Redfish write to resize it (a PATCH answers 405); once ready again
its blocks are those it holds now."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from composer.models import Composition, Job
from composer.services.resize import resize_request
from composer.tasks import composition_resize_task
from fabric.models import FabricManager
from tests.composer.redfish.conftest import RedfishClient
from tests.composer.services.test_health import compose

pytestmark = pytest.mark.django_db

V1 = "/redfish/v1"


def test_a_resizing_system_is_updating_and_refuses_a_delete_then_shows_its_new_blocks(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    redfish_as: Callable[[Any], RedfishClient],
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition: Composition = compose(acme, alice, {"items": [{"kind": "gpu"}]})
    client = redfish_as(alice)
    path = f"{V1}/Systems/{composition.pk}"
    before = client.get(path).json()["Links"]["ResourceBlocks"]

    resize_request(composition=composition, add=[{"kind": "gpu"}], remove=[], requested_by=alice)
    body = client.get(path).json()
    assert (body["Status"]["State"], body["Status"]["Health"], body["PowerState"]) == (
        "Updating",
        "OK",
        "On",
    )
    assert client.delete(path).status_code == 409
    assert client.patch(path, {"Links": {"ResourceBlocks": before}}).status_code == 405

    composition_resize_task.delay(Job.objects.get(kind="resize").pk)
    after = client.get(path).json()
    assert after["Status"]["State"] == "Enabled"
    assert len(after["Links"]["ResourceBlocks"]) == len(before) + 1
