"""The search page: what each viewer finds, how it is ranked and grouped, one kind a page at
a time, bad input, and a bounded number of queries.

The fabric is the small one of tests/factories/fabric.py (hosts host-a/b, switches sw-a/b,
GPU chassis gpu-a/b with GPUs gpu-a-0..3 and gpu-b-0..3, links between them).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from composer.choices import CompositionState, JobKind
from composer.models import AlertAudience, Composition
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert
from tests.factories.composer import JobFactory
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db

SEARCH = reverse("composer:search")


def _hits(response: Any) -> dict[str, list[str]]:
    """{kind: [labels]} of a grouped result page."""
    return {g.finder.kind: [h.label for h in g.hits] for g in response.context["groups"]}


@pytest.fixture
def boxes(small: SmallFabric, acme: Any, globex: Any, alice: Any, carol: Any) -> dict[str, Any]:
    host = small.hosts[0]
    return {
        "acme": Composition.objects.create(
            tenant=acme,
            name="train-acme",
            requested_by=alice,
            host=host,
            state=CompositionState.READY,
        ),
        "globex": Composition.objects.create(
            tenant=globex,
            name="train-globex",
            requested_by=carol,
            state=CompositionState.READY,
        ),
    }


def _alert(small: SmallFabric, *, tenant: Any | None, rule: str = rules.ELEMENT_FAILED) -> Alert:
    now = timezone.now()
    gpu = small.gpus[0]
    alert = Alert.objects.create(
        manager=small.manager,
        source_type=AlertSource.DEVICE,
        source_id=gpu.pk,
        source_name=gpu.name,
        rule=rule,
        severity=AlertSeverity.CRITICAL,
        message=f"{gpu.name} failed (Critical)",
        opened_at=now,
        last_seen_at=now,
    )
    if tenant is not None:
        AlertAudience.objects.create(alert=alert, tenant=tenant)
    return alert


def test_an_operator_finds_every_kind_grouped_in_order(
    client_as: Any, admin_user: Any, small: SmallFabric, boxes: dict[str, Any]
) -> None:
    response = client_as(admin_user).get(SEARCH, {"q": "-a"})
    assert response.status_code == 200
    hits = _hits(response)
    assert list(hits) == [
        "host",
        "device",
        "enclosure",
        "switch",
        "link",
        "rack",
        "power_feed",
        "composition",
    ]
    assert hits["rack"] == ["rack-a"] and hits["power_feed"] == ["pdu-a"]
    assert hits["host"] == ["host-a"]
    assert hits["switch"] == ["sw-a"]
    assert hits["enclosure"] == ["gpu-a", "mem-a"]
    # Five of a kind, then "more": gpu-a-0..3, mem-a-0, and the rest of rack A's memory.
    group = next(g for g in response.context["groups"] if g.finder.kind == "device")
    assert [h.label for h in group.hits] == ["gpu-a-0", "gpu-a-1", "gpu-a-2", "gpu-a-3", "mem-a-0"]
    assert group.more
    assert 'href="/search/?q=-a&amp;kind=device"' in response.content.decode()
    assert hits["link"] and all("-a:" in label for label in hits["link"])
    assert hits["composition"] == ["train-acme"]
    body = response.content.decode()
    assert "<mark>-a</mark>" in body
    assert reverse("fabric:host_detail", args=[small.hosts[0].pk]) in body


def test_an_operator_finds_by_serial_and_by_the_managers_id(
    client_as: Any, admin_user: Any, small: SmallFabric
) -> None:
    gpu = small.gpus[5]
    gpu.serial = "SN-7781-QX"
    gpu.save(update_fields=["serial"])
    client = client_as(admin_user)
    assert _hits(client.get(SEARCH, {"q": "7781-qx"})) == {"device": [gpu.name]}
    assert _hits(client.get(SEARCH, {"q": "host-b"}))["host"] == ["host-b"]


def test_the_exact_name_then_names_that_start_with_it_come_first(
    client_as: Any, admin_user: Any, small: SmallFabric
) -> None:
    names = _hits(client_as(admin_user).get(SEARCH, {"q": "gpu-b", "kind": ""}))
    # The chassis gpu-b is an enclosure; among devices the names starting with it lead.
    assert names["enclosure"][0] == "gpu-b"
    assert names["device"][:4] == ["gpu-b-0", "gpu-b-1", "gpu-b-2", "gpu-b-3"]


def test_a_member_finds_devices_pools_and_their_own_things_but_no_fabric_internals(
    client_as: Any, alice: Any, small: SmallFabric, boxes: dict[str, Any], acme: Any, globex: Any
) -> None:
    small.gpus[0].serial = "SN-SECRET-1"
    small.gpus[0].save(update_fields=["serial"])
    client = client_as(alice)
    hits = _hits(client.get(SEARCH, {"q": "-a"}))
    assert set(hits) == {"device", "composition"}  # no hosts, switches, enclosures, links
    assert hits["composition"] == ["train-acme"]
    assert _hits(client.get(SEARCH, {"q": "train"})) == {"composition": ["train-acme"]}
    assert _hits(client.get(SEARCH, {"q": "SECRET"})) == {}  # serials are operators'
    assert _hits(client.get(SEARCH, {"q": "host-a"})) == {}  # hosts are fabric internals
    assert _hits(client.get(SEARCH, {"q": "h100"}))["pool"] == ["H100 GPUs"]
    pool = next(
        g for g in client.get(SEARCH, {"q": "h100"}).context["groups"] if g.finder.kind == "pool"
    )
    assert pool.hits[0].detail == "GPU · H100 SXM · 8 of 8 devices free"
    assert _hits(client.get(SEARCH, {"q": "globex"})) == {}
    assert _hits(client.get(SEARCH, {"q": "acme"}))["tenant"] == ["Acme"]
    response = client.get(SEARCH, {"q": "host-a"})
    assert "Nothing you can see matches" in response.content.decode()
    assert "SN-SECRET" not in client.get(SEARCH, {"q": "gpu-a-0"}).content.decode()


def test_ids_find_compositions_and_jobs_the_viewer_may_see(
    client_as: Any, alice: Any, carol: Any, boxes: dict[str, Any], acme: Any, globex: Any
) -> None:
    theirs = JobFactory.create(kind=JobKind.COMPOSE, tenant=globex, target_label="train-globex")
    ours = JobFactory.create(kind=JobKind.COMPOSE, tenant=acme, target_label="train-acme")
    client = client_as(alice)
    found = _hits(client.get(SEARCH, {"q": f"#{ours.pk}"}))
    assert any(label.startswith(f"#{ours.pk} ") for label in found["job"])
    assert not any(
        label.startswith(f"#{theirs.pk} ")
        for label in _hits(client.get(SEARCH, {"q": f"#{theirs.pk}"})).get("job", [])
    )
    box = boxes["acme"]
    assert "train-acme" in _hits(client.get(SEARCH, {"q": str(box.pk)})).get("composition", [])
    other = boxes["globex"]
    assert "train-globex" not in _hits(client.get(SEARCH, {"q": str(other.pk)})).get(
        "composition", []
    )
    assert _hits(client_as(carol).get(SEARCH, {"q": "train"})) == {
        "composition": ["train-globex"],
        "job": [f"#{theirs.pk} Compose train-globex"],
    }


def test_members_find_the_alerts_that_hurt_them_by_the_words_they_see(
    client_as: Any, admin_user: Any, alice: Any, carol: Any, small: SmallFabric, acme: Any
) -> None:
    hurt_acme = _alert(small, tenant=acme)
    nobody = _alert(small, tenant=None, rule=rules.TEMPERATURE)
    operator = _hits(client_as(admin_user).get(SEARCH, {"q": "gpu-a-0"}))
    assert operator["alert"] == [hurt_acme.message, nobody.message]
    words = hurt_acme.tenant_message.split()[0:2]  # "A device"
    alice_found = _hits(client_as(alice).get(SEARCH, {"q": " ".join(words)}))
    assert alice_found["alert"] == [hurt_acme.tenant_message]
    # The element's name is not in the tenant's words: it finds nothing by it.
    assert "alert" not in _hits(client_as(alice).get(SEARCH, {"q": "gpu-a-0 failed"}))
    assert "alert" not in _hits(client_as(carol).get(SEARCH, {"q": " ".join(words)}))


def test_one_kind_pages_through_every_match(
    client_as: Any, admin_user: Any, small: SmallFabric
) -> None:
    response = client_as(admin_user).get(SEARCH, {"q": "gpu-", "kind": "device"})
    assert response.status_code == 200
    assert response.context["page"].paginator.count == 8
    assert [h.label for h in response.context["hits"]][:2] == ["gpu-a-0", "gpu-a-1"]
    assert "Devices: 8</span> match “gpu-”" in response.content.decode()
    past = client_as(admin_user).get(SEARCH, {"q": "gpu-", "kind": "device", "page": "9"})
    assert past.status_code == 404


def test_bad_input_is_a_400_that_names_the_field(client_as: Any, alice: Any) -> None:
    client = client_as(alice)
    too_long = client.get(SEARCH, {"q": "x" * 101})
    assert too_long.status_code == 400
    assert "Search: Ensure this value has at most 100 characters" in too_long.content.decode()
    hosts = client.get(SEARCH, {"q": "a", "kind": "host"})  # operators' kind
    assert hosts.status_code == 400
    assert "Kind: Select a valid choice" in hosts.content.decode()
    blank = client.get(SEARCH, {"q": "  ", "kind": "device"})
    assert blank.status_code == 400
    assert "Search: Type something to search for." in blank.content.decode()


def test_an_empty_box_shows_what_can_be_searched(client_as: Any, alice: Any) -> None:
    response = client_as(alice).get(SEARCH)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="search-help"' in body
    assert "Compositions" in body and "Hosts" not in body


def test_anonymous_viewers_are_sent_to_log_in(client: Any) -> None:
    response = client.get(SEARCH, {"q": "gpu"})
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_a_search_is_one_query_per_kind(
    client_as: Any, admin_user: Any, small: SmallFabric, boxes: dict[str, Any]
) -> None:
    client = client_as(admin_user)
    client.get(SEARCH, {"q": "a"})  # warm the session
    with CaptureQueriesContext(connection) as queries:
        response = client.get(SEARCH, {"q": "a"})
    assert response.status_code == 200
    searched = [q for q in queries.captured_queries if "search_rank" in q["sql"]]
    assert len(searched) == 13
    assert len(queries.captured_queries) <= len(searched) + 8


@pytest.mark.parametrize("text", ["²", "#²", "①", "1" * 25])
def test_digits_that_are_no_number_are_text_not_an_error(
    client_as: Any, admin_user: Any, alice: Any, small: SmallFabric, text: str
) -> None:
    for user in (admin_user, alice):
        assert client_as(user).get(SEARCH, {"q": text}).status_code == 200


def test_a_members_alerts_keep_the_same_order_whatever_the_operators_message_says(
    client_as: Any, alice: Any, small: SmallFabric, acme: Any
) -> None:
    """Ranking on the message a member cannot read would tell its first letters."""
    older = _alert(small, tenant=acme)
    newer = _alert(small, tenant=acme, rule=rules.TEMPERATURE)
    Alert.objects.filter(pk=older.pk).update(message="aa-one failed")
    Alert.objects.filter(pk=newer.pk).update(message="ys-two failed")
    client = client_as(alice)
    for text in ("a", "y", "A device"):
        page = client.get(SEARCH, {"q": text, "kind": "alert"})
        assert [h.id for h in page.context["hits"]] == [newer.pk, older.pk], text


def test_jobs_come_newest_first(
    client_as: Any, alice: Any, boxes: dict[str, Any], acme: Any
) -> None:
    jobs = [
        JobFactory.create(kind=JobKind.COMPOSE, tenant=acme, target_label="train-acme")
        for _ in range(3)
    ]
    found = client_as(alice).get(SEARCH, {"q": "train-acme", "kind": "job"})
    assert [h.id for h in found.context["hits"]] == [j.pk for j in reversed(jobs)]
