"""The request form's words and fields: numbers as typed, the name as typed and unique among
the tenant's live compositions, errors beside the field in the console's words, a preview's
errors that do not say "nothing was requested", and self-heal on top of a template."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.choices import CompositionState
from composer.models import Composition, Template
from fabric.models import Device, FabricManager
from fabric.services.sync import inventory_sync

pytestmark = pytest.mark.django_db

HTMX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}
ONE_GPU = {"item_0_kind": "gpu", "item_0_count": "1", "policy": "none"}
CREATE = "composer:composition_create"


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    inventory_sync(manager=sim_manager)
    return sim_manager


def _input(content: bytes, name: str) -> str:
    """The rendered <input> of field `name`."""
    match = re.search(rf'<input[^>]*name="{name}"[^>]*>', content.decode())
    assert match, name
    return match.group(0)


def test_number_fields_are_text_boxes_so_letters_reach_the_server(
    acme: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    """A browser sends "" for letters typed into <input type=number>: the count would read
    as not given (1) and the memory as none. As text, what was typed is what is checked."""
    page = client_as(alice).get(reverse(CREATE)).content
    for name in ("item_0_count", "item_2_min_memory_gib", "memory_gib", "storage_tb", "cores"):
        box = _input(page, name)
        assert 'type="text"' in box and 'inputmode="' in box, box


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (
            {"item_0_kind": "gpu", "item_0_count": "abc"},
            "item_0_count",
            "Count must be a whole number.",
        ),
        ({"item_0_kind": "gpu", "item_0_count": "-1"}, "item_0_count", "Count must be at least 1."),
        ({"item_1_kind": "gpu", "item_1_count": "0"}, "item_1_count", "Count must be at least 1."),
        ({"item_0_count": "2"}, "item_0_kind", "Choose the kind of device."),
        (
            {"item_0_kind": "gpu", "item_0_min_memory_gib": "big"},
            "item_0_min_memory_gib",
            "Minimum memory (GiB) must be a number.",
        ),
        ({**ONE_GPU, "memory_gib": "lots"}, "memory_gib", "CXL memory must be a whole number."),
        ({**ONE_GPU, "cores": "-4"}, "cores", "Host cores must be at least 0."),
        (
            {**ONE_GPU, "max_latency_ns": "0"},
            "max_latency_ns",
            "Latency ceiling must be at least 1.",
        ),
    ],
)
def test_errors_are_beside_the_field_in_the_consoles_words(
    data: dict[str, str],
    field: str,
    message: str,
    synced: FabricManager,
    alice: Any,
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(alice).post(reverse(CREATE), {"name": "x", "policy": "none", **data})
    assert response.status_code == 400
    assert response.context["form"].errors[field] == [message]
    assert b"items[" not in response.content and b"got " not in response.content
    assert not Composition.objects.exists()


def test_same_switch_with_a_spread_across_switches_is_refused_beside_the_policy(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    data = {"name": "x", "item_0_kind": "gpu", "item_0_count": "2", "policy": "switch"}
    client = client_as(alice)
    for url in (CREATE, "composer:composition_preview"):
        response = client.post(reverse(url), {**data, "same_switch": "on"}, **HTMX)
        assert response.status_code == 400
        assert response.context["form"].errors["policy"] == [
            "Spread across switches puts each device behind a switch of its own; it cannot go "
            "with all devices behind one switch. Choose one of the two."
        ]
    assert not Composition.objects.exists()


def test_a_name_over_the_limit_is_refused_not_cut(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    assert "maxlength" not in _input(client.get(reverse(CREATE)).content, "name")
    response = client.post(reverse(CREATE), {"name": "n" * 130, **ONE_GPU}, **HTMX)
    assert response.status_code == 400
    assert response.context["form"].errors["name"] == [
        "Name is at most 100 characters; this one has 130."
    ]
    assert b'id="error-name"' in response.content
    assert not Composition.objects.exists()
    response = client.post(reverse(CREATE), {"name": "  ", **ONE_GPU})
    assert response.context["form"].errors["name"] == ["Give the composition a name."]


def test_a_name_is_unique_among_the_tenants_live_compositions(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    carol: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(alice)
    assert client.post(reverse(CREATE), {"name": "llm-serve", **ONE_GPU}).status_code == 302
    response = client.post(reverse(CREATE), {"name": " llm-serve ", **ONE_GPU}, **HTMX)
    assert response.status_code == 400
    assert response.context["form"].errors["name"] == [
        "Acme already has a composition with this name (placing)."
    ]
    assert Composition.objects.filter(name="llm-serve").count() == 1
    # Another tenant may use it; and once released, so may Acme again.
    assert (
        client_as(carol).post(reverse(CREATE), {"name": "llm-serve", **ONE_GPU}).status_code == 302
    )
    Composition.objects.filter(tenant=acme).update(state=CompositionState.RELEASED)
    again = client_as(alice).post(reverse(CREATE), {"name": "llm-serve", **ONE_GPU})
    assert again.status_code == 302, again.context["form"].errors


def test_a_preview_with_errors_does_not_say_nothing_was_requested(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    data = {"item_0_kind": "gpu", "item_0_count": "-1", "policy": "none"}
    preview = client.post(reverse("composer:composition_preview"), data, **HTMX)
    assert preview.status_code == 400
    assert b"Nothing was requested" not in preview.content
    assert b"Not previewed: correct the fields marked below." in preview.content
    request = client.post(reverse(CREATE), {"name": "x", **data}, **HTMX)
    assert b"Nothing was requested: correct the fields marked below." in request.content


@pytest.mark.parametrize(
    ("default", "ticked", "expected"), [(False, True, True), (True, False, False)]
)
def test_self_heal_is_the_tenants_choice_on_top_of_a_template(
    default: bool,
    ticked: bool,
    expected: bool,
    synced: FabricManager,
    alice: Any,
    client_as: Callable[[Any], Client],
) -> None:
    template = Template(
        name="one-gpu",
        slug="one-gpu",
        spec={"items": [{"kind": "gpu", "count": 1}], "self_heal": default},
    )
    template.full_clean()
    template.save()
    client = client_as(alice)
    page = client.get(reverse(CREATE)).content.decode()
    # The checkbox is outside the fieldset that a template locks.
    fieldset = page[page.index('<fieldset id="custom-fields"') : page.index("</fieldset>")]
    assert 'name="self_heal"' not in fieldset and 'name="self_heal"' in page
    data = {"name": "healing", "template": template.pk}
    if ticked:
        data["self_heal"] = "on"
    response = client.post(reverse(CREATE), data)
    assert response.status_code == 302
    composition = Composition.objects.get(name="healing")
    assert composition.spec["self_heal"] is expected
    assert composition.spec["items"][0]["count"] == 1  # the rest is the template's
    shown = client.get(response["Location"]).content.decode()
    row = re.search(r'<dd id="composition-self-heal">(.*?)</dd>', shown, re.S)
    assert row, "the composition page says whether it heals itself"
    assert ("On" if expected else "Off") in row.group(1)
    assert "overrides the template" in row.group(1)


def test_named_devices_are_composed_as_typed(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("name").first()
    memory = Device.objects.filter(kind="cxl_memory").first()
    assert gpu is not None and memory is not None
    typed = f"{gpu.name}, {memory.name}:64"
    response = client_as(alice).post(
        reverse(CREATE), {"name": "pinned", "policy": "none", "devices": typed}
    )
    assert response.status_code == 302, response.content[:2000]
    composition = Composition.objects.get()
    held = set(composition.allocations.values_list("device_id", "gib"))
    assert held == {(gpu.pk, None), (memory.pk, 64)}


def test_an_unknown_named_device_is_refused_beside_the_field(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).post(
        reverse(CREATE), {"name": "x", "policy": "none", "devices": "gpu-nope"}
    )
    assert response.status_code == 400
    assert response.context["form"].errors["devices"] == ["There is no device named 'gpu-nope'."]
    assert not Composition.objects.exists()
