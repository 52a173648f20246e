"""GET /api/v1/events/: the event stream, polled; scoped like the websocket."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import EventType, JobKind
from composer.events import event_record
from composer.models import Composition, Event, Job
from composer.services.api_tokens import api_token_issue
from tests.support.api import assert_error, count_queries

pytestmark = pytest.mark.django_db
URL = "/api/v1/events/"


def feed(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"results", "next", "last_event_id"}, body
    return body


@pytest.fixture
def recorded(acme: Any, globex: Any) -> dict[str, Event]:
    """An Acme composition event, a Globex one, an alert touching both, a fabric job's."""
    acme_box = Composition.objects.create(tenant=acme, name="acme-train", spec={})
    globex_box = Composition.objects.create(tenant=globex, name="globex-infer", spec={})
    boxes = [
        {"id": box.pk, "name": box.name, "tenant_id": box.tenant_id, "state": "degraded"}
        for box in (acme_box, globex_box)
    ]

    def state(box: Composition) -> Event:
        payload = {"composition_id": box.pk, "name": box.name, "tenant_id": box.tenant_id}
        return event_record(
            EventType.COMPOSITION_STATE, payload, tenant_ids=[box.tenant_id], composition=box
        )

    sync = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    return {
        "acme": state(acme_box),
        "globex": state(globex_box),
        "alert": event_record(
            EventType.FABRIC_ALERT,
            {
                "alert": {"id": 3, "severity": "critical", "state": "open"},
                "blast_radius": {
                    "devices": 4,
                    "hosts": 1,
                    "compositions": boxes,
                    "composition_count": 2,
                    "tenants": [acme.pk, globex.pk],
                },
            },
            tenant_ids=[acme.pk, globex.pk],
        ),
        "fabric": event_record(EventType.JOB_PROGRESS, {"tenant_id": None}, job=sync),
    }


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        ("admin_user", ["acme", "globex", "alert", "fabric"]),
        ("alice", ["acme", "alert"]),
        ("bob", ["acme", "alert"]),
        ("carol", ["globex", "alert"]),
    ],
)
def test_each_persona_gets_only_its_events_oldest_first(
    persona: str,
    visible: list[str],
    recorded: dict[str, Event],
    api_as: Any,
    request: pytest.FixtureRequest,
) -> None:
    body = feed(api_as(request.getfixturevalue(persona)).get(URL))
    assert [row["id"] for row in body["results"]] == [recorded[name].pk for name in visible]
    assert body["last_event_id"] == recorded[visible[-1]].pk
    assert body["next"] is None


def test_rows_are_the_websocket_messages_and_a_tenant_gets_its_cut(
    recorded: dict[str, Event], carol: Any, api_as: Any
) -> None:
    rows = feed(api_as(carol).get(URL))["results"]
    alert = rows[-1]
    assert set(alert) == {
        "type",
        "id",
        "event_type",
        "at",
        "composition_id",
        "job_id",
        "payload",
    }
    assert (alert["type"], alert["event_type"]) == ("event", "fabric.alert")
    radius = alert["payload"]["blast_radius"]
    assert [c["name"] for c in radius["compositions"]] == ["globex-infer"]
    assert radius["composition_count"] == 1
    assert "tenants" not in radius
    assert "acme" not in str(rows)


def test_an_operator_gets_the_whole_payload(
    recorded: dict[str, Event], admin_user: Any, api_as: Any
) -> None:
    rows = feed(api_as(admin_user).get(URL, {"type": "fabric.alert"}))["results"]
    assert rows[0]["payload"] == recorded["alert"].payload


def test_since_limit_and_next_page_through_the_stream(
    recorded: dict[str, Event], admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    first = feed(client.get(URL, {"limit": 3}))
    assert [row["id"] for row in first["results"]] == [
        recorded[n].pk for n in ("acme", "globex", "alert")
    ]
    assert first["next"] and f"since={recorded['alert'].pk}" in first["next"]
    second = feed(client.get(first["next"]))
    assert [row["id"] for row in second["results"]] == [recorded["fabric"].pk]
    assert second["next"] is None
    # Caught up: nothing new, and the cursor stays where it was.
    empty = feed(client.get(URL, {"since": second["last_event_id"]}))
    assert empty == {"results": [], "next": None, "last_event_id": recorded["fabric"].pk}


def test_filters_by_type_composition_and_job(
    recorded: dict[str, Event], admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)

    def ids(**query: Any) -> list[int]:
        return [row["id"] for row in feed(client.get(URL, query))["results"]]

    assert ids(type="composition.state") == [recorded["acme"].pk, recorded["globex"].pk]
    assert ids(type=["fabric.alert", "job.progress"]) == [
        recorded["alert"].pk,
        recorded["fabric"].pk,
    ]
    assert ids(composition=recorded["globex"].composition_id) == [recorded["globex"].pk]
    assert ids(job=recorded["fabric"].job_id) == [recorded["fabric"].pk]


def test_another_tenants_composition_filter_finds_nothing(
    recorded: dict[str, Event], carol: Any, api_as: Any
) -> None:
    query = {"composition": recorded["acme"].composition_id}
    assert feed(api_as(carol).get(URL, query))["results"] == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"since": "abc"}, "since"),
        ({"since": "-1"}, "since"),
        ({"since": "1.5"}, "since"),
        ({"since": "9" * 40}, "since"),
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"type": "banana"}, "type"),
        ({"composition": "x"}, "composition"),
        ({"job": "1.5"}, "job"),
        ({"since": "9" * 5000}, "since"),  # too long even for int() to read
        ({"limit": "9" * 5000}, "limit"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    query: dict[str, str], field: str, alice: Any, api_as: Any
) -> None:
    assert_error(api_as(alice).get(URL, query), 400, "invalid", field=field)


def test_a_limit_over_the_schema_s_maximum_is_400(
    recorded: dict[str, Event], admin_user: Any, api_as: Any
) -> None:
    api = api_as(admin_user)
    assert_error(api.get(URL, {"limit": "501"}), 400, "invalid", field="limit")
    assert len(feed(api.get(URL, {"limit": "500"}))["results"]) == 4


def test_anonymous_gets_401(api: Any) -> None:
    assert_error(api.get(URL), 401, "not_authenticated")


def test_a_token_client_polls_too(recorded: dict[str, Event], alice: Any, api: Any) -> None:
    key = api_token_issue(user=alice, remote_addr=None).key
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert len(feed(api.get(URL))["results"]) == 2


@pytest.mark.parametrize("persona", ["admin_user", "alice"])
def test_the_query_count_does_not_grow_with_the_page(
    persona: str, acme: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    event_record(EventType.DEVICE_HEALTH, {}, tenant_ids=[acme.pk])
    few = count_queries(lambda: client.get(URL))
    for _ in range(20):
        event_record(EventType.DEVICE_HEALTH, {}, tenant_ids=[acme.pk])
    assert count_queries(lambda: client.get(URL)) == few <= 2


def test_the_schema_documents_the_stream_with_an_example(api: Any) -> None:
    schema = api.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"][URL]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {
        "since",
        "limit",
        "type",
        "composition",
        "job",
    }
    ok = operation["responses"]["200"]["content"]["application/json"]
    example = next(iter(ok["examples"].values()))["value"]
    assert set(example) == {"results", "next", "last_event_id"}
    assert example["results"][0]["event_type"] == "composition.state"
    assert {"400", "401"} <= set(operation["responses"])
