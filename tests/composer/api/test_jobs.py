"""GET /api/v1/jobs/ and /api/v1/jobs/{id}/: tenants see their jobs, operators all jobs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import JobKind, JobStatus
from composer.models import JobLogLine
from tests.factories.composer import JobFactory
from tests.support.api import assert_error, count_queries, results

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(acme: Any, globex: Any, admin_user: Any, alice: Any) -> dict[str, Any]:
    """A fabric job (no tenant), an Acme job and a Globex job."""
    sync = JobFactory.create(
        kind=JobKind.INVENTORY_SYNC,
        requested_by=admin_user,
        target_type="fabric_manager",
        target_id=1,
        target_label="fm-small",
        status=JobStatus.RUNNING,
        progress_done=3,
        progress_total=4,
    )
    acme_job = JobFactory(kind=JobKind.INVENTORY_SYNC, tenant=acme, requested_by=alice)
    globex_job = JobFactory(kind=JobKind.INVENTORY_SYNC, tenant=globex, status=JobStatus.SUCCEEDED)
    start = timezone.now()
    for i, level in enumerate(["INFO", "WARNING", "INFO"]):
        JobLogLine.objects.create(
            job=sync, at=start + timedelta(seconds=i), level=level, message=f"step {i}"
        )
    return {"sync": sync, "acme": acme_job, "globex": globex_job}


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        ("admin_user", {"sync", "acme", "globex"}),
        ("alice", {"acme"}),
        ("bob", {"acme"}),
        ("carol", {"globex"}),
    ],
)
def test_each_persona_lists_only_the_jobs_it_may_see(
    persona: str,
    visible: set[str],
    jobs: dict[str, Any],
    api_as: Any,
    request: pytest.FixtureRequest,
) -> None:
    rows = results(api_as(request.getfixturevalue(persona)).get("/api/v1/jobs/"))
    assert {row["id"] for row in rows} == {jobs[name].pk for name in visible}


@pytest.mark.parametrize(
    ("persona", "hidden"),
    [
        ("alice", "sync"),
        ("alice", "globex"),
        ("bob", "globex"),
        ("carol", "acme"),
        ("carol", "sync"),
    ],
)
def test_a_job_outside_the_callers_tenants_is_404(
    persona: str,
    hidden: str,
    jobs: dict[str, Any],
    api_as: Any,
    request: pytest.FixtureRequest,
) -> None:
    client = api_as(request.getfixturevalue(persona))
    assert_error(client.get(f"/api/v1/jobs/{jobs[hidden].pk}/"), 404, "not_found")


def test_the_job_detail_has_progress_and_the_log(
    jobs: dict[str, Any], api_as: Any, admin_user: Any
) -> None:
    row = api_as(admin_user).get(f"/api/v1/jobs/{jobs['sync'].pk}/").json()
    assert row["status"] == "running"
    assert row["progress_percent"] == 75
    assert row["tenant"] is None
    assert row["requested_by"] == "admin"
    assert row["target_label"] == "fm-small"
    assert [line["message"] for line in row["log_lines"]] == ["step 0", "step 1", "step 2"]
    assert row["log_lines"][1]["level"] == "WARNING"


def test_a_tenant_job_names_its_tenant(jobs: dict[str, Any], api_as: Any, bob: Any) -> None:
    row = api_as(bob).get(f"/api/v1/jobs/{jobs['acme'].pk}/").json()
    assert row["tenant"] == {"id": jobs["acme"].tenant.pk, "slug": "acme", "name": "Acme"}
    assert row["requested_by"] == "alice"
    assert row["log_lines"] == []


def test_the_list_has_no_log_lines(jobs: dict[str, Any], api_as: Any, admin_user: Any) -> None:
    for row in results(api_as(admin_user).get("/api/v1/jobs/")):
        assert "log_lines" not in row


def test_jobs_filter_by_status(jobs: dict[str, Any], api_as: Any, admin_user: Any) -> None:
    client = api_as(admin_user)
    rows = results(client.get("/api/v1/jobs/?status=running&status=succeeded"))
    assert {row["id"] for row in rows} == {jobs["sync"].pk, jobs["globex"].pk}
    assert_error(client.get("/api/v1/jobs/?status=done"), 400, "invalid", field="status")
    assert_error(client.get("/api/v1/jobs/?kind=banana"), 400, "invalid", field="kind")


@pytest.mark.parametrize("pk", ["999999", "abc"])
def test_unknown_or_non_numeric_job_ids_are_404(
    pk: str, jobs: dict[str, Any], api_as: Any, admin_user: Any
) -> None:
    assert_error(api_as(admin_user).get(f"/api/v1/jobs/{pk}/"), 404, "not_found")


def test_anonymous_callers_get_401(jobs: dict[str, Any], api: Any) -> None:
    assert_error(api.get("/api/v1/jobs/"), 401, "not_authenticated")
    assert_error(api.get(f"/api/v1/jobs/{jobs['acme'].pk}/"), 401, "not_authenticated")


@pytest.mark.parametrize("persona", ["admin_user", "alice"])
def test_the_job_list_query_count_does_not_grow_with_rows(
    persona: str, acme: Any, alice: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    JobFactory(tenant=acme, requested_by=alice)
    few = count_queries(lambda: client.get("/api/v1/jobs/"))
    for _ in range(15):
        JobFactory(tenant=acme, requested_by=alice)
        JobFactory(requested_by=alice)
    many = count_queries(lambda: client.get("/api/v1/jobs/"))
    assert many == few


def test_the_job_detail_query_count_does_not_grow_with_log_lines(
    jobs: dict[str, Any], api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    path = f"/api/v1/jobs/{jobs['sync'].pk}/"
    few = count_queries(lambda: client.get(path))
    for i in range(20):
        JobLogLine.objects.create(job=jobs["sync"], at=timezone.now(), level="INFO", message=str(i))
    assert count_queries(lambda: client.get(path)) == few


@pytest.mark.parametrize(("who", "sees"), [("admin_user", True), ("alice", False)])
def test_only_operators_read_the_lease_of_a_running_job(
    who: str, sees: bool, acme: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    job = JobFactory.create(
        tenant=acme,
        status=JobStatus.RUNNING,
        lease_owner="celery@worker-7 pid 4242",
        lease_expires_at=timezone.now(),
        resumes=2,
    )
    row = api_as(request.getfixturevalue(who)).get(f"/api/v1/jobs/{job.pk}/").json()
    assert row["resumes"] == 2
    if sees:
        assert row["lease"]["owner"] == "celery@worker-7 pid 4242"
    else:
        assert row["lease"] is None
