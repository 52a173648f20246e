"""A job's log and error as a tenant reads them: its own steps in its words — devices bound,
verified, rolled back and why — and nothing of the fabric manager's own lines (the driver
that speaks, the manager's name, binding ids, enclosure names), on the job and composition
pages, in the API and on the websocket; operators keep every line."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.db import transaction
from django.urls import reverse

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from composer.tasks import composition_compose_task
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from tests.fabric.simulated_world import simulated_manager
from tests.support.compose import composed
from tests.support.text import named as _named
from tests.support.websocket import db, open_as, quiet, receive, run, session_cookie, use_layer

SPEC = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 256}
# What only the fabric's side says: the driver's own lines and the loggers of fabric code.
DRIVER_WORDS = re.compile(r"simulated|fabric\.drivers|fabric\.\w+\.")


def _job(composition: Composition) -> Job:
    return Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)


def _compose_into_a_failed_enclosure(manager: FabricManager, tenant: Any, user: Any) -> str:
    """A compose whose GPU's enclosure fails between placement and binding: the job fails
    and rolls back. Returns the enclosure's name (a fabric internal)."""
    with transaction.atomic():  # the job is enqueued on commit (in a transactional test)
        composition = composition_request(
            tenant=tenant, requested_by=user, spec=SPEC, name="doomed"
        )
        gpu = composition.allocations.filter(device__kind="gpu").first()
        enclosure = gpu.device.enclosure.name
        fault_inject(manager=manager, target_type="enclosure", target_id=enclosure, action="fail")
    if _job(composition).status == JobStatus.QUEUED:  # inside the test's own transaction
        composition_compose_task.delay(_job(composition).pk)
    composition.refresh_from_db()
    assert composition.state == CompositionState.FAILED
    return enclosure


def _pages(client: Any, job: Job) -> str:
    composition = reverse("composer:composition_detail", args=[job.target_id])
    pages = [
        reverse("composer:job_detail", args=[job.pk]),
        reverse("composer:job_progress", args=[job.pk]),  # what a live update redraws
        composition,
    ]
    answers = [client.get(page) for page in pages]
    assert [a.status_code for a in answers] == [200, 200, 200]
    return "\n".join(a.content.decode() for a in answers)


@pytest.mark.django_db
def test_a_composes_log_reads_in_the_tenants_words_and_operators_keep_every_line(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    bob: Any,
    carol: Any,
    admin_user: Any,
    client_as: Any,
    api_as: Any,
) -> None:
    composition = composed(tenant=acme, user=alice, spec=SPEC, name="llm-serve")
    job = _job(composition)
    host = composition.host.name
    bindings = [a.binding_id for a in composition.allocations.all()]
    gpu = composition.allocations.filter(device__kind="gpu").first().device.name
    api = f"/api/v1/jobs/{job.pk}/"

    def internals(text: str) -> list[str]:
        found = [b for b in bindings if b in text] + DRIVER_WORDS.findall(text)
        return found + ([synced.name] if _named(text, synced.name) else [])

    for member in (alice, bob):
        lines = api_as(member).get(api).json()["log_lines"]
        assert lines and all(set(line) == {"id", "at", "level", "message"} for line in lines)
        said = [line["message"] for line in lines]
        assert f"Bound GPU {gpu} to {host}." in said
        assert f"Verified 3 device(s) on {host}." in said
        assert not internals(json.dumps(lines)), said
        page = _pages(client_as(member), job)
        assert f"Bound GPU {gpu} to {host}." in page and not internals(page)
        # Nor anywhere else in the job as the API gives it, in detail or listed.
        body = api_as(member).get(api).json()
        assert body["result"] == {"composition": composition.pk, "state": "ready", "host": host}
        listed = api_as(member).get("/api/v1/jobs/").json()["results"]
        assert not internals(json.dumps(body)) and not internals(json.dumps(listed))

    assert api_as(carol).get(api).status_code == 404
    assert client_as(carol).get(reverse("composer:job_detail", args=[job.pk])).status_code == 404

    lines = api_as(admin_user).get(api).json()["log_lines"]
    loggers = {line["logger"] for line in lines}
    assert "fabric.simulator.driver" in loggers
    assert all(b in json.dumps(lines) for b in bindings)
    assert api_as(admin_user).get(api).json()["result"]["bindings"] == bindings
    assert len(lines) > len(api_as(alice).get(api).json()["log_lines"])
    assert "fabric.simulator.driver" in _pages(client_as(admin_user), job)


@pytest.mark.django_db
def test_a_failed_compose_tells_the_tenant_why_without_the_managers_words(
    synced: FabricManager, acme: Any, alice: Any, admin_user: Any, client_as: Any, api_as: Any
) -> None:
    enclosure = _compose_into_a_failed_enclosure(synced, acme, alice)
    composition = Composition.objects.get(name="doomed")
    job = _job(composition)
    gpu = composition.allocations.filter(device__kind="gpu").first().device.name
    refused = f"The fabric manager refused to bind {gpu} to {composition.host.name}."

    body = api_as(alice).get(f"/api/v1/jobs/{job.pk}/").json()
    said = [line["message"] for line in body["log_lines"]]
    assert refused in said
    assert any(line.startswith("Rolling back:") for line in said)
    assert said[-1] == f"Failed: Fabric manager error (permanent): {refused}"
    assert body["error"] == f"Fabric manager error (permanent): {refused}"
    detail = api_as(alice).get(f"/api/v1/compositions/{composition.pk}/").json()
    assert detail["failure_reason"] == refused
    for text in (json.dumps(body), json.dumps(detail), _pages(client_as(alice), job)):
        assert not _named(text, enclosure)

    # Operators read the manager's own answer in the log.
    operator = json.dumps(api_as(admin_user).get(f"/api/v1/jobs/{job.pk}/").json())
    assert _named(operator, enclosure)


@pytest.mark.django_db(transaction=True)
def test_a_failed_compose_reaches_alice_live_without_the_managers_words_and_carol_not_at_all(
    redis_url: str, settings: Any, acme: Any, alice: Any, carol: Any
) -> None:
    use_layer(settings, redis_url)
    manager = simulated_manager()
    inventory_sync(manager=manager)
    cookies = {u.username: session_cookie(u) for u in (alice, carol)}

    async def scenario() -> None:
        a, _ = await open_as(cookies["alice"])
        c, _ = await open_as(cookies["carol"])
        enclosure = await db(_compose_into_a_failed_enclosure)(manager, acme, alice)

        heard: list[dict[str, Any]] = []
        while not heard or heard[-1]["payload"].get("status") != "failed":
            message = await receive(a, 5.0)
            if message["type"] == "event" and message["event_type"] == "job.progress":
                heard.append(message)
            elif message["type"] == "event":
                assert not _named(json.dumps(message), enclosure), message
        text = json.dumps(heard)
        assert heard[-1]["payload"]["error"].startswith("Fabric manager error (permanent): ")
        assert not _named(text, enclosure) and not DRIVER_WORDS.search(text), text
        assert await quiet(c, 0.5)
        for ws in (a, c):
            await ws.disconnect()

    run(scenario)
