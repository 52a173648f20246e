"""Job pages: tenants see their own jobs only; sync jobs are for operators; live polling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from composer.choices import JobStatus
from composer.models import Job, JobLogLine
from fabric.models import FabricManager
from tests.factories.composer import JobFactory
from tests.factories.fabric import SmallFabric
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def sync_job(small: SmallFabric, admin_user: Any) -> Job:
    job = JobFactory.create(
        status=JobStatus.RUNNING,
        target_type="fabric_manager",
        target_id=small.manager.pk,
        target_label=small.manager.name,
        requested_by=admin_user,
        progress_done=3,
        progress_total=12,
        message="Reading devices",
        started_at=timezone.now(),
    )
    for i, level in enumerate(["INFO", "WARNING"]):
        JobLogLine.objects.create(
            job=job,
            at=timezone.now(),
            level=level,
            logger="fabric.services.sync",
            message=f"line {i}: discovered enclosure gpu-a",
        )
    return job


@pytest.fixture
def acme_job(acme: Any) -> Job:
    return JobFactory.create(
        tenant=acme, status=JobStatus.SUCCEEDED, target_label="acme-training-1"
    )


def test_operators_see_sync_jobs_with_progress_and_log(
    sync_job: Job, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    listing = client.get(reverse("composer:job_list"))
    assert listing.status_code == 200
    assert [j.pk for j in listing.context["page"]] == [sync_job.pk]
    response = client.get(reverse("composer:job_detail", args=[sync_job.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Reading devices" in body and "25%" in body and "3 of 12 steps" in body
    assert "line 0: discovered enclosure gpu-a" in body and "line 1" in body
    assert reverse("fabric:manager_detail", args=[sync_job.target_id]) in body
    # Still running: the progress partial reloads on live events, and polls while they are down.
    assert 'hx-trigger="refresh, every 2s [composerPollFallback()]"' in body
    assert f'data-live-job="{sync_job.pk}"' in body
    assert reverse("composer:job_progress", args=[sync_job.pk]) in body


def test_a_finished_job_stops_polling(
    sync_job: Job, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    Job.objects.filter(pk=sync_job.pk).update(
        status=JobStatus.FAILED,
        error="DriverError: fabric manager unreachable",
        finished_at=timezone.now(),
    )
    client = client_as(admin_user)
    partial = client.get(reverse("composer:job_progress", args=[sync_job.pk]))
    assert partial.status_code == 200
    body = partial.content.decode()
    assert "<html" not in body
    assert "every 2s" not in body
    assert "fabric manager unreachable" in body


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_never_see_sync_jobs(
    who: str, sync_job: Job, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    client = client_as(persona(who))
    listing = client.get(reverse("composer:job_list"))
    assert listing.status_code == 200
    assert list(listing.context["page"]) == []
    assert "fm-small" not in listing.content.decode()
    assert client.get(reverse("composer:job_detail", args=[sync_job.pk])).status_code == 404
    assert client.get(reverse("composer:job_progress", args=[sync_job.pk])).status_code == 404


@pytest.mark.parametrize(("who", "sees"), [("alice", True), ("bob", True), ("carol", False)])
def test_a_tenant_job_is_seen_by_that_tenant_only(
    who: str,
    sees: bool,
    acme_job: Job,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(persona(who))
    listing = client.get(reverse("composer:job_list"))
    assert ([j.pk for j in listing.context["page"]] == [acme_job.pk]) is sees
    status = client.get(reverse("composer:job_detail", args=[acme_job.pk])).status_code
    assert status == (200 if sees else 404)


def test_the_job_list_filters_and_rejects_bad_values(
    sync_job: Job, acme_job: Job, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    url = reverse("composer:job_list")
    running = client.get(url, {"status": "running"})
    assert [j.pk for j in running.context["page"]] == [sync_job.pk]
    both = client.get(url, {"status": ["running", "succeeded"], "kind": "inventory_sync"})
    assert {j.pk for j in both.context["page"]} == {sync_job.pk, acme_job.pk}
    bad = client.get(url, {"status": "exploded"})
    assert bad.status_code == 400
    assert "exploded is not one of the available choices" in bad.content.decode()
    assert client.get(url, {"page": "12"}).status_code == 404
    assert client.get(url, {"page": "x"}).status_code == 400


def test_the_job_list_reloads_on_job_events_and_polls_only_without_them(
    sync_job: Job, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    page = client.get(reverse("composer:job_list")).content.decode()
    assert 'data-live-type="job.progress composition.state"' in page
    assert 'hx-trigger="refresh, every 5s [composerPollFallback()]"' in page
    partial = client.get(
        reverse("composer:job_list"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="job-table"
    )
    assert partial.content.decode().lstrip().startswith('<div id="job-table"')
    Job.objects.filter(pk=sync_job.pk).update(status=JobStatus.SUCCEEDED)
    page = client.get(reverse("composer:job_list")).content.decode()
    assert 'hx-trigger="refresh"' in page and "every 5s" not in page
    assert (
        'data-live-type="job.progress composition.state"' in page
    )  # a new job still shows up at once


def test_an_unknown_job_is_404(admin_user: Any, client_as: Callable[[Any], Client]) -> None:
    assert client_as(admin_user).get(reverse("composer:job_detail", args=[9999])).status_code == 404


# --- "Sync now" ------------------------------------------------------------------------------


def test_sync_now_queues_a_job_and_shows_it(
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    enqueued: list[int] = []
    monkeypatch.setattr(
        "composer.tasks.inventory_sync_task.delay", lambda job_id: enqueued.append(job_id)
    )
    client = client_as(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("composer:manager_sync", args=[small.manager.pk]))
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("composer:job_detail", args=[job.pk])
    assert (job.target_id, job.requested_by, job.status) == (
        small.manager.pk,
        admin_user,
        JobStatus.QUEUED,
    )
    assert enqueued == [job.pk]
    page = client.get(response["Location"])
    assert f"queued as job {job.pk}" in page.content.decode()


def test_sync_now_of_a_disabled_manager_explains_why_not(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    FabricManager.objects.filter(pk=small.manager.pk).update(is_enabled=False)
    client = client_as(admin_user)
    response = client.post(reverse("composer:manager_sync", args=[small.manager.pk]), follow=True)
    assert response.redirect_chain[-1][0] == reverse(
        "fabric:manager_detail", args=[small.manager.pk]
    )
    assert "is disabled" in response.content.decode()
    assert not Job.objects.exists()


def test_sync_now_needs_a_post(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    url = reverse("composer:manager_sync", args=[small.manager.pk])
    assert client_as(admin_user).get(url).status_code == 405


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_cannot_sync(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).post(
        reverse("composer:manager_sync", args=[small.manager.pk])
    )
    assert response.status_code == 404
    assert not Job.objects.exists()


def test_an_empty_list_says_so(client_as: Callable[[Any], Client], alice: Any) -> None:
    """An empty page is falsy: the table must still render, with its "no rows" line."""
    response = client_as(alice).get(reverse("composer:job_list"))
    assert response.status_code == 200 and "No jobs yet: composing" in response.content.decode()
    compositions = client_as(alice).get(reverse("composer:composition_list"))
    assert "No compositions yet." in compositions.content.decode()


@pytest.mark.parametrize(("who", "sees"), [("admin_user", True), ("alice", False)])
def test_only_operators_see_which_worker_holds_a_running_job(
    who: str, sees: bool, acme: Any, persona: Any, client_as: Callable[[Any], Client]
) -> None:
    job = JobFactory.create(
        tenant=acme,
        status=JobStatus.RUNNING,
        started_at=timezone.now(),
        lease_owner="celery@worker-7 pid 4242",
        lease_expires_at=timezone.now(),
        resumes=1,
    )
    body = client_as(persona(who)).get(reverse("composer:job_detail", args=[job.pk])).text
    assert ("worker-7 pid 4242" in body) is sees
    assert "resumed 1 time after its worker stopped" in body


def test_the_jobs_page_is_in_every_members_navbar(
    client_as: Callable[[Any], Client], alice: Any
) -> None:
    """Tenant members see their own compositions' jobs there, so the navbar leads there."""
    page = client_as(alice).get(reverse("composer:dashboard")).content.decode()
    assert f'href="{reverse("composer:job_list")}"' in page
