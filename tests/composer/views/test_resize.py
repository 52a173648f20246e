"""The resize card of a ready composition's page: the form for those who may write, the
preview (nothing held), the resize (the job queued, back to the page), errors beside the
field that is wrong; nothing for read-only members, 404 for others."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job, Quota
from composer.views.resize import spec_words
from fabric.models import FabricManager
from tests.composer.services.test_health import compose

pytestmark = pytest.mark.django_db

ONE_H100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]}
HTMX = {"HX-Request": "true"}


@pytest.fixture
def ready(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return compose(acme, alice, {**ONE_H100, "memory_gib": 64}, name="r1")


def card(client: Client, composition: Composition) -> Any:
    return client.get(reverse("composer:composition_resize", args=[composition.pk]), headers=HTMX)


def post(client: Client, name: str, composition: Composition, data: dict[str, Any]) -> Any:
    return client.post(reverse(f"composer:{name}", args=[composition.pk]), data, headers=HTMX)


def test_the_page_loads_the_card_and_the_card_offers_the_form(
    ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    page = client.get(reverse("composer:composition_detail", args=[ready.pk])).content.decode()
    assert 'id="composition-resize"' in page and 'id="resize-link"' in page

    html = card(client, ready).content.decode()

    assert 'id="resize-form"' in html and "csrfmiddlewaretoken" in html
    memory = ready.allocations.get(gib__isnull=False)
    assert f'value="{memory.pk}"' in html and "CXL memory" in html
    assert 'name="add_0_kind"' in html and 'name="memory_gib"' in html


def test_the_preview_shows_what_is_added_and_removed_and_holds_nothing(
    ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    memory = ready.allocations.get(gib__isnull=False)
    response = post(
        client_as(alice),
        "composition_resize_preview",
        ready,
        {"add_0_kind": "gpu", "add_0_count": "1", "remove": [str(memory.pk)]},
    )

    assert response.status_code == 200, response.content
    html = response.content.decode()
    assert 'id="resize-plan"' in html and html.count('class="resize-added"') == 1
    assert memory.device.name in html and "Remove" in html
    assert "Afterwards" in html and "2 GPUs" not in html  # one H100 and one of any model
    ready.refresh_from_db()
    assert ready.state == CompositionState.READY and ready.allocations.count() == 2


def test_resize_queues_the_job_and_goes_back_to_the_page(
    ready: Composition,
    alice: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = post(
            client_as(alice),
            "composition_resize",
            ready,
            {"add_0_kind": "gpu", "add_0_count": "1", "gpu_share": "250"},
        )

    assert response.status_code == 200 and response["HX-Redirect"] == reverse(
        "composer:composition_detail", args=[ready.pk]
    )
    job = Job.objects.get(kind=JobKind.RESIZE)
    assert [str(m) for m in get_messages(response.wsgi_request)] == [f"Resizing r1 (job {job.pk})."]
    ready.refresh_from_db()
    assert ready.state == CompositionState.READY
    assert ready.allocations.filter(released_at__isnull=True).count() == 4
    change = ready.state_changes.get(to_state="resizing")
    assert change.actor == alice and change.source == "console"


@pytest.mark.parametrize(
    ("data", "field", "text"),
    [
        ({"add_1_kind": "gpu", "add_1_count": "0"}, "add_1_count", "at least 1"),
        ({"add_0_kind": "gpu", "add_0_model": "Nope"}, "add_0_model", "Unknown"),
        ({"memory_gib": "lots"}, "memory_gib", "whole number"),
        ({"gpu_share": "1000"}, "gpu_share", "1 to 999"),
        ({}, None, "changes nothing"),
    ],
)
def test_bad_input_comes_back_beside_the_field(
    ready: Composition,
    alice: Any,
    client_as: Callable[[Any], Client],
    data: dict[str, Any],
    field: str | None,
    text: str,
) -> None:
    for name in ("composition_resize_preview", "composition_resize"):
        response = post(client_as(alice), name, ready, data)
        assert response.status_code == 400, name
        html = response.content.decode()
        where = f'id="error-{field}"' if field else 'id="resize-errors"'
        assert where in html and text in html, (name, html[:3000])
    assert not Job.objects.filter(kind=JobKind.RESIZE).exists()


def test_a_quota_error_sits_beside_the_count_and_a_rejection_shows_the_nearest(
    synced: FabricManager, acme: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    spread = compose(acme, alice, {"items": [{"kind": "gpu", "count": 2}], "policy": "enclosure"})
    response = post(client_as(alice), "composition_resize", spread, {"add_0_kind": "gpu"})
    html = response.content.decode()
    assert response.status_code == 400 and 'id="resize-rejection"' in html
    assert "Nothing was resized" in html and "Nearest alternative" in html

    Quota.objects.create(tenant=acme, kind="gpu", max_count=2)
    response = post(client_as(alice), "composition_resize", spread, {"add_0_kind": "gpu"})
    assert 'id="error-add_0_count"' in response.content.decode()


def test_bob_gets_no_form_and_403_and_carol_404(
    ready: Composition, bob: Any, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    reader = client_as(bob)
    assert 'id="resize-form"' not in card(reader, ready).content.decode()
    page = reader.get(reverse("composer:composition_detail", args=[ready.pk])).content.decode()
    assert 'id="resize-link"' not in page
    for name in ("composition_resize_preview", "composition_resize"):
        assert post(reader, name, ready, {"add_0_kind": "gpu"}).status_code == 403
    outsider = client_as(carol)
    for name in ("composition_resize_preview", "composition_resize"):
        assert post(outsider, name, ready, {"add_0_kind": "gpu"}).status_code == 404
    assert card(outsider, ready).status_code == 404


def test_the_card_is_empty_while_the_composition_is_not_ready(
    ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    Composition.objects.filter(pk=ready.pk).update(state=CompositionState.RESIZING)
    html = card(client_as(alice), ready).content.decode()
    assert 'id="composition-resize"' in html and 'id="resize-form"' not in html

    response = post(client_as(alice), "composition_resize", ready, {"add_0_kind": "gpu"})
    assert response.status_code == 400 and "only a ready composition" in response.content.decode()


def test_a_request_reads_as_a_sentence() -> None:
    spec = {
        "items": [
            {"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2},
            {"kind": "gpu", "model": None, "count": 1, "share": 250},
        ],
        "devices": [{"device": "nic-1"}],
        "memory_gib": 2048,
    }
    assert spec_words(spec) == (
        "2 GPUs (H100 PCIe 80GB), a 250/1000 share of a GPU, nic-1, 2,048 GiB of CXL memory"
    )


def test_a_card_still_true_is_not_redrawn_and_one_out_of_date_is(
    ready: Composition, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    html = card(client, ready).content.decode()
    url = re.search(r'hx-get="([^"]+\?v=[^"]+)"', html)
    assert url is not None
    again = client.get(url.group(1).replace("&amp;", "&"), headers=HTMX)
    assert again.status_code == 204  # nothing changed: what is being typed stays

    Composition.objects.filter(pk=ready.pk).update(state=CompositionState.RESIZING)
    changed = client.get(url.group(1).replace("&amp;", "&"), headers=HTMX)
    assert changed.status_code == 200 and 'id="resize-form"' not in changed.content.decode()
