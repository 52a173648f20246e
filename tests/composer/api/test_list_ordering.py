"""The list endpoints sort and filter as their console pages do: `ordering` with the pages'
values (rows without a value last either way), the alerts' free text in the caller's words,
and a bad value a 400 naming the field."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import AlertAudience, Composition, Template
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert
from tests.factories.composer import JobFactory
from tests.factories.fabric import SmallFabric
from tests.support.api import assert_error, results

pytestmark = pytest.mark.django_db


def _names(response: Any, key: str = "name") -> list[Any]:
    return [row[key] for row in results(response)]


def test_compositions_sort_by_the_pages_values(
    small: SmallFabric, acme: Any, globex: Any, alice: Any, admin_user: Any, api_as: Any
) -> None:
    now = timezone.now()
    Composition.objects.create(
        tenant=acme, name="b", host=small.hosts[0], state="ready", ready_at=now
    )
    Composition.objects.create(tenant=acme, name="a", state=CompositionState.REJECTED)
    Composition.objects.create(
        tenant=globex, name="g", host=small.hosts[1], state="ready", ready_at=now
    )
    url = "/api/v1/compositions/"
    operator = api_as(admin_user)
    assert _names(operator.get(url, {"ordering": "-name"})) == ["g", "b", "a"]
    assert _names(operator.get(url, {"ordering": "tenant,name"})) == ["a", "b", "g"]
    assert _names(operator.get(url, {"ordering": "-host"})) == ["g", "b", "a"]
    assert _names(operator.get(url, {"ordering": "ready,-name"})) == ["g", "b", "a"]
    assert _names(api_as(alice).get(url, {"ordering": "-ready"})) == ["b", "a"]
    assert_error(operator.get(url, {"ordering": "banana"}), 400, "invalid", field="ordering")


def test_jobs_sort_by_duration_and_id(acme: Any, alice: Any, admin_user: Any, api_as: Any) -> None:
    now = timezone.now()
    short = JobFactory.create(
        kind=JobKind.COMPOSE,
        tenant=acme,
        status=JobStatus.SUCCEEDED,
        started_at=now - timedelta(seconds=10),
        finished_at=now - timedelta(seconds=8),
    )
    queued = JobFactory.create(kind=JobKind.DECOMPOSE, tenant=acme)
    long = JobFactory.create(
        kind=JobKind.HEAL,
        tenant=acme,
        status=JobStatus.SUCCEEDED,
        started_at=now - timedelta(seconds=100),
        finished_at=now - timedelta(seconds=10),
    )
    sync = JobFactory.create(kind=JobKind.INVENTORY_SYNC)
    client = api_as(alice)
    url = "/api/v1/jobs/"
    assert _names(client.get(url, {"ordering": "-duration"}), "id") == [
        long.pk,
        short.pk,
        queued.pk,
    ]
    assert _names(client.get(url, {"ordering": "duration"}), "id") == [
        short.pk,
        long.pk,
        queued.pk,
    ]
    assert _names(api_as(admin_user).get(url, {"ordering": "id"}), "id") == [
        short.pk,
        queued.pk,
        long.pk,
        sync.pk,
    ]
    assert _names(client.get(url, {"ordering": "kind", "status": "succeeded"}), "kind") == [
        "compose",
        "heal",
    ]
    assert_error(client.get(url, {"ordering": "lease"}), 400, "invalid", field="ordering")


@pytest.fixture
def alerts(small: SmallFabric, acme: Any) -> list[Alert]:
    now = timezone.now()
    made = []
    for i, (severity, source, name) in enumerate(
        [
            (AlertSeverity.WARNING, AlertSource.SWITCH, small.switches[0].name),
            (AlertSeverity.CRITICAL, AlertSource.DEVICE, small.gpus[0].name),
            (AlertSeverity.INFO, AlertSource.DEVICE, small.gpus[1].name),
        ]
    ):
        alert = Alert.objects.create(
            manager=small.manager,
            source_type=source,
            source_id=i + 1,
            source_name=name,
            rule=rules.ELEMENT_DEGRADED,
            severity=severity,
            message=f"{name} degraded: fan speed low",
            opened_at=now - timedelta(minutes=i),
            last_seen_at=now,
            occurrences=i + 1,
        )
        AlertAudience.objects.create(alert=alert, tenant=acme)
        made.append(alert)
    return made


def test_alerts_sort_by_severity_and_seen(
    alerts: list[Alert], alice: Any, admin_user: Any, api_as: Any
) -> None:
    url = "/api/v1/alerts/"
    ids = [a.pk for a in alerts]
    operator = api_as(admin_user)
    assert _names(operator.get(url, {"ordering": "severity"}), "id") == [ids[1], ids[0], ids[2]]
    assert _names(operator.get(url, {"ordering": "-seen"}), "id") == [ids[2], ids[1], ids[0]]
    assert _names(api_as(alice).get(url, {"ordering": "-severity"}), "id") == [
        ids[2],
        ids[0],
        ids[1],
    ]
    assert_error(operator.get(url, {"ordering": "message"}), 400, "invalid", field="ordering")


def test_alert_text_matches_what_the_caller_is_shown(
    alerts: list[Alert], small: SmallFabric, alice: Any, admin_user: Any, api_as: Any
) -> None:
    url = "/api/v1/alerts/"
    ids = [a.pk for a in alerts]
    operator = api_as(admin_user)
    assert _names(operator.get(url, {"q": small.gpus[0].name}), "id") == [ids[1]]
    assert len(results(operator.get(url, {"q": "fan speed"}))) == 3
    member = api_as(alice)
    # Alice reads "A device your compositions depend on is degraded.": not the names.
    assert _names(member.get(url, {"q": "a device"}), "id") == [ids[1], ids[2]]
    assert results(member.get(url, {"q": small.gpus[0].name})) == []
    assert results(member.get(url, {"q": "fan speed"})) == []
    assert_error(member.get(url, {"q": "x" * 101}), 400, "invalid", field="q")


def test_templates_filter_by_text_and_sort(alice: Any, admin_user: Any, api_as: Any) -> None:
    for slug, active, description in (
        ("alpha", True, "small"),
        ("beta", True, "big GPUs"),
        ("gamma", False, "big but retired"),
    ):
        template = Template(
            name=slug, slug=slug, spec={"cores": 1}, is_active=active, description=description
        )
        template.full_clean()
        template.save()
    url = "/api/v1/templates/"
    assert _names(api_as(alice).get(url, {"q": "big"}), "slug") == ["beta"]
    operator = api_as(admin_user)
    assert _names(operator.get(url, {"q": "big", "ordering": "-name"}), "slug") == [
        "gamma",
        "beta",
    ]
    assert _names(operator.get(url, {"is_active": "false"}), "slug") == ["gamma"]
    assert_error(operator.get(url, {"ordering": "spec"}), 400, "invalid", field="ordering")
