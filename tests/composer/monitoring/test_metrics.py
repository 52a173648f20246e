"""/metrics: parsed by prometheus-client's own parser, checked against the database after a
compose and a fault, and served only to the networks and token configured."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db.models import Q
from django.test import Client

from composer.choices import CompositionState
from composer.models import Composition, Event
from composer.services.health_poll import health_poll_run
from fabric.choices import AlertState, ComponentState, DeviceState, Health, LinkState
from fabric.models import Alert, Device, FabricManager, Host, Link, Switch
from fabric.selectors import pool_capacities
from fabric.services.pools import pools_assign, pools_ensure_defaults
from fabric.simulator.faults import fault_inject
from tests.support.compose import composed
from tests.support.metrics import Scrape, scrape

pytestmark = pytest.mark.django_db

L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


def pools_agree(after: Scrape) -> None:
    """Every pool's series equal the capacity selector's figures."""
    for cap in pool_capacities():
        labels = {
            "pool": cap.pool.name,
            "kind": cap.pool.kind,
            "unit": "gib" if cap.unit == "GiB" else "devices",
        }
        for name in ("capacity", "allocated", "free", "unavailable"):
            assert after.value(f"composer_pool_{name}", **labels) == getattr(cap, name), name
        assert 0 <= after.value("composer_pool_stranded", **labels) <= cap.free


@pytest.fixture
def pooled(synced: FabricManager) -> FabricManager:
    """The tiny world with a pool per kind, model and rack (as the demo has)."""
    pools_ensure_defaults(manager=synced)
    pools_assign(manager=synced)
    return synced


def test_the_series_agree_with_the_database_after_a_compose_and_a_fault(
    client: Client, pooled: FabricManager, acme: Any, alice: Any
) -> None:
    synced = pooled
    assert pool_capacities()
    before = scrape(client)
    pools_agree(before)

    composition = composed(tenant=acme, user=alice, name="c1", spec=L40S)

    after = scrape(client)
    pools_agree(after)
    gpu = composition.allocations.get(device__kind="gpu").device
    pool = {"pool": gpu.pool.name, "kind": "gpu", "unit": "devices"}
    assert after.value("composer_pool_allocated", **pool) == (
        before.value("composer_pool_allocated", **pool) + 1
    )
    assert after.value("composer_compositions", state="ready", tenant=acme.slug) == 1
    assert after.value("composer_compositions", state="failed", tenant=acme.slug) == 0
    assert after.value("composer_jobs", kind="compose", status="queued") == 0
    # Per process: this run's compose, its duration, and the driver's binds.
    runs = {"kind": "compose", "outcome": "succeeded"}
    assert (
        after.get("composer_job_runs_total", **runs)
        == before.get("composer_job_runs_total", **runs) + 1
    )
    assert (
        after.get("composer_job_duration_seconds_count", **runs)
        == before.get("composer_job_duration_seconds_count", **runs) + 1
    )
    binds = {"manager": synced.name, "operation": "bind"}
    assert after.get("composer_driver_call_duration_seconds_count", **binds) > before.get(
        "composer_driver_call_duration_seconds_count", **binds
    )
    assert after.value("composer_manager_sync_failing", manager=synced.name) == 0
    assert after.value("composer_manager_sync_age_seconds", manager=synced.name) >= 0

    health_poll_run(manager=synced)
    fault_inject(manager=synced, target_type="device", target_id=gpu.name, action="fail")
    health_poll_run(manager=synced)

    faulted = scrape(client)
    pools_agree(faulted)
    composition.refresh_from_db()
    assert composition.state == CompositionState.DEGRADED
    assert faulted.value("composer_compositions", state="degraded", tenant=acme.slug) == 1
    assert faulted.value("composer_compositions", state="ready", tenant=acme.slug) == 0
    for severity in ("info", "warning", "critical"):
        open_alerts = Alert.objects.filter(state=AlertState.OPEN, severity=severity).count()
        assert faulted.value("composer_alerts_open", severity=severity) == open_alerts
    assert faulted.value("composer_alerts_open", severity="critical") >= 1
    present = Device.objects.exclude(state=DeviceState.ABSENT)
    for health in ("ok", "warning", "critical", "unknown"):
        assert faulted.value("composer_devices", kind="gpu", health=health) == (
            present.filter(kind="gpu", health=health).count()
        )
    assert faulted.value("composer_manager_health_poll_failing", manager=synced.name) == 0
    assert "composer_metrics_collect_error" not in faulted.families


def test_free_devices_no_host_reaches_are_stranded(client: Client, pooled: FabricManager) -> None:
    gpu = Device.objects.filter(kind="gpu", state=DeviceState.FREE).first()
    labels = {"pool": gpu.pool.name, "kind": "gpu", "unit": "devices"}
    assert scrape(client).value("composer_pool_stranded", **labels) == 0
    enclosure = gpu.enclosure
    cut = Link.objects.filter(Q(a_port__enclosure=enclosure) | Q(b_port__enclosure=enclosure))
    assert cut.update(state=LinkState.DOWN)

    result = scrape(client)
    behind = Device.objects.filter(
        enclosure=enclosure, pool=gpu.pool, state=DeviceState.FREE, health__in=["ok", "unknown"]
    ).count()
    assert behind >= 1
    assert result.value("composer_pool_stranded", **labels) == behind
    assert result.value("composer_pool_free", **labels) >= behind


def stranded_and_free(client: Client) -> list[tuple[float, float]]:
    """(stranded, free) of every pool, from one scrape."""
    result = scrape(client)
    pools = [
        {
            "pool": cap.pool.name,
            "kind": cap.pool.kind,
            "unit": "gib" if cap.unit == "GiB" else "devices",
        }
        for cap in pool_capacities()
    ]
    return [
        (result.value("composer_pool_stranded", **p), result.value("composer_pool_free", **p))
        for p in pools
    ]


def test_a_critical_switch_strands_the_gpus_only_it_connects(
    client: Client, pooled: FabricManager
) -> None:
    gpu = Device.objects.filter(kind="gpu", state=DeviceState.FREE).first()
    labels = {"pool": gpu.pool.name, "kind": "gpu", "unit": "devices"}
    assert scrape(client).value("composer_pool_stranded", **labels) == 0
    enclosure = gpu.enclosure
    uplinks = Link.objects.filter(Q(a_port__enclosure=enclosure) | Q(b_port__enclosure=enclosure))
    switches = {
        port.switch_id
        for link in uplinks.select_related("a_port", "b_port")
        for port in (link.a_port, link.b_port)
        if port.switch_id
    }
    assert switches
    Switch.objects.filter(pk__in=switches).update(health=Health.CRITICAL)

    behind = Device.objects.filter(
        enclosure=enclosure, pool=gpu.pool, state=DeviceState.FREE, health__in=["ok", "unknown"]
    ).count()
    assert behind >= 1
    assert scrape(client).value("composer_pool_stranded", **labels) >= behind


@pytest.mark.parametrize(
    "change", [{"health": Health.CRITICAL}, {"state": ComponentState.MAINTENANCE}]
)
def test_without_a_usable_host_every_free_device_is_stranded(
    client: Client, pooled: FabricManager, change: dict[str, str]
) -> None:
    assert all(stranded == 0 for stranded, _ in stranded_and_free(client))
    Host.objects.update(**change)
    figures = stranded_and_free(client)
    assert any(free for _, free in figures)
    assert all(stranded == free for stranded, free in figures), figures


def test_a_family_that_fails_is_named_and_the_others_still_answer(
    client: Client, pooled: FabricManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise RuntimeError("table locked")

    monkeypatch.setattr("composer.monitoring.collector.pool_capacities", broken)
    monkeypatch.setattr(Event, "objects", None)  # a bug in the outbox's family
    result = scrape(client)
    assert result.value("composer_metrics_collect_error", family="pools") == 1
    assert result.value("composer_metrics_collect_error", family="outbox") == 1
    assert result.text.count("# TYPE composer_metrics_collect_error ") == 1
    assert "composer_pool_capacity" not in result.families  # nothing half-read
    assert "composer_alerts_open" in result.families


def test_a_bad_network_setting_refuses_every_scrape_and_says_why(
    client: Client, settings: Any, db: None, caplog: pytest.LogCaptureFixture
) -> None:
    settings.COMPOSER_METRICS_ALLOWED_NETWORKS = ["10.0.0.0/33"]
    assert client.get("/metrics").status_code == 403
    assert "COMPOSER_METRICS_ALLOWED_NETWORKS: '10.0.0.0/33'" in caplog.text


# Units that are not Prometheus's base units (seconds, bytes, ratios), as a name's words.
NON_BASE_UNITS = frozenset(
    [
        "ns",
        "nanoseconds",
        "us",
        "microseconds",
        "ms",
        "milliseconds",
        "minutes",
        "hours",
        "days",
        "kb",
        "mb",
        "gb",
        "kib",
        "mib",
        "gib",
        "kilobytes",
        "megabytes",
        "gigabytes",
        "percent",
    ]
)


def convention_faults(text: str) -> list[str]:
    """What breaks Prometheus's naming conventions in an exposition, read from its TYPE
    lines (the text format names a counter with its `_total` there; the parser drops it
    from the family's name, so the parsed families cannot tell)."""
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    faults = []
    for family, kind in types.items():
        words = family.split("_")
        faults += [f"{family}: {w} is not a base unit" for w in words if w in NON_BASE_UNITS]
        if kind == "counter" and not family.endswith("_total"):
            faults.append(f"{family}: a counter's name lacks _total")
    return faults


def test_the_convention_check_catches_a_counter_without_total_and_a_non_base_unit() -> None:
    bad = (
        "# HELP composer_things Things.\n# TYPE composer_things counter\ncomposer_things 3.0\n"
        "# HELP composer_wait_ms Wait.\n# TYPE composer_wait_ms gauge\ncomposer_wait_ms 1.0\n"
    )
    faults = convention_faults(bad)
    assert "composer_things: a counter's name lacks _total" in faults
    assert any("composer_wait_ms: ms" in f for f in faults)


def test_names_follow_prometheus_conventions(client: Client, synced: FabricManager) -> None:
    result = scrape(client)
    ours = {name: f for name, f in result.families.items() if name.startswith("composer_")}
    assert len(ours) > 30
    assert convention_faults(result.text) == []
    for name in ("composer_celery_queue_length", "composer_processes_alive", "composer_redis_up"):
        assert name in ours, name


def test_no_composition_or_device_name_is_a_label(
    client: Client, synced: FabricManager, acme: Any, alice: Any
) -> None:
    composition = composed(tenant=acme, user=alice, name="secret-project-x", spec=L40S)
    text = scrape(client).text
    assert "secret-project-x" not in text
    device = composition.allocations.first().device
    assert device.serial and device.serial not in text
    assert device.name not in text


def test_an_address_outside_the_allowed_networks_gets_403(client: Client, db: None) -> None:
    response = client.get("/metrics", REMOTE_ADDR="10.1.2.3")
    assert response.status_code == 403
    assert "allowed networks" in response.json()["detail"]


def test_the_allowed_networks_are_configurable(client: Client, settings: Any, db: None) -> None:
    settings.COMPOSER_METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


@pytest.mark.parametrize(
    "header",
    [
        {"Forwarded": "for=203.0.113.7"},
        {"X-Forwarded-For": "203.0.113.7"},
        {"X-Real-IP": "203.0.113.7"},
    ],
)
def test_without_a_token_a_scrape_through_a_proxy_gets_403(
    client: Client, settings: Any, db: None, header: dict[str, str]
) -> None:
    settings.COMPOSER_METRICS_TOKEN = ""
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", headers=header)
    assert response.status_code == 403
    assert "COMPOSER_METRICS_TOKEN" in response.json()["detail"]
    settings.COMPOSER_METRICS_TOKEN = "s3cr3t-metrics-token"
    bearer = {"Authorization": "Bearer s3cr3t-metrics-token", **header}
    assert client.get("/metrics", headers=bearer).status_code == 200


def test_with_a_token_a_scrape_must_bear_it(client: Client, settings: Any, db: None) -> None:
    settings.COMPOSER_METRICS_TOKEN = "s3cr3t-metrics-token"
    missing = client.get("/metrics")
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 401
    right = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cr3t-metrics-token")
    assert right.status_code == 200
    # The network still counts.
    outside = client.get(
        "/metrics", HTTP_AUTHORIZATION="Bearer s3cr3t-metrics-token", REMOTE_ADDR="10.1.2.3"
    )
    assert outside.status_code == 403


def test_scope_splits_the_processes_series_from_the_domains(
    client: Client, synced: FabricManager
) -> None:
    process = scrape(client, "/metrics?scope=process")
    domain = scrape(client, "/metrics?scope=domain")
    assert "composer_job_runs" in process.families
    assert "composer_pool_capacity" not in process.families
    assert "composer_pool_capacity" in domain.families
    assert "composer_job_runs" not in domain.families
    assert client.get("/metrics?scope=nonsense").status_code == 400


def test_websocket_and_event_series_exist(client: Client, db: None) -> None:
    result = scrape(client)
    for name in (
        "composer_websockets_connected",
        "composer_events_published",
        "composer_event_replay_requests",
        "composer_outbox_events_pending",
        "composer_outbox_oldest_event_age_seconds",
    ):
        assert name in result.families, name


def test_a_composition_count_per_state(
    client: Client, synced: FabricManager, acme: Any, alice: Any
) -> None:
    composed(tenant=acme, user=alice, name="c1", spec=L40S)
    result = scrape(client)
    for state in CompositionState.values:
        expected = Composition.objects.filter(tenant=acme, state=state).count()
        assert result.value("composer_compositions", state=state, tenant=acme.slug) == expected


def test_a_failed_compose_counts_a_failed_run_a_rollback_and_a_driver_error(
    client: Client, synced: FabricManager, acme: Any, alice: Any
) -> None:
    from composer.choices import JobKind
    from composer.models import Job
    from composer.services.compositions import composition_request
    from composer.tasks import composition_compose_task
    from fabric.simulator import store

    before = scrape(client)
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="bind", mode="permanent", count=1
    )
    composition = composition_request(tenant=acme, requested_by=alice, spec=L40S, name="f1")
    composition_compose_task.delay(
        Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk).pk
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.FAILED

    after = scrape(client)
    failed = {"kind": "compose", "outcome": "failed"}
    for name, labels in (
        ("composer_job_runs_total", failed),
        ("composer_job_duration_seconds_count", failed),
        ("composer_jobs_rolled_back_total", {"kind": "compose"}),
        (
            "composer_driver_call_errors_total",
            {"manager": synced.name, "operation": "bind", "kind": "permanent"},
        ),
    ):
        assert after.get(name, **labels) == before.get(name, **labels) + 1, name
    assert after.value("composer_compositions", state="failed", tenant=acme.slug) == 1
