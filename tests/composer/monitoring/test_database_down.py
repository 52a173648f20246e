"""With the database away, /readyz and the domain's collector answer at once, naming it."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from composer.monitoring import dbprobe
from composer.monitoring.collector import DomainCollector
from composer.monitoring.readiness import readiness

pytestmark = pytest.mark.django_db

DATABASE_FAMILIES = {"pools", "compositions", "jobs", "health", "managers", "outbox"}


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def database_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe's database is at a closed port (PostgreSQL), or the probe fails."""
    if connection.vendor == "postgresql":
        params = dbprobe._connect_params
        port = closed_port()
        monkeypatch.setattr(
            dbprobe, "_connect_params", lambda: {**params(), "host": "127.0.0.1", "port": port}
        )
    else:
        monkeypatch.setattr(dbprobe, "database_probe", lambda: "OperationalError")


def test_probe_answers_when_the_database_answers() -> None:
    assert dbprobe.database_probe() is None


def test_readiness_names_the_database_at_once(database_down: None) -> None:
    started = time.monotonic()
    with CaptureQueriesContext(connection) as queries:
        checks = {c.name: c for c in readiness(["database", "outbox"])}
    assert time.monotonic() - started < 2
    assert len(queries) == 0
    assert not checks["database"].ok
    assert checks["database"].detail.startswith("not reachable (")
    assert not checks["outbox"].ok
    assert "database not reachable" in checks["outbox"].detail


def test_collector_marks_every_database_family_failed_at_once(
    database_down: None, settings: Any
) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"  # Redis away too: fast
    started = time.monotonic()
    with CaptureQueriesContext(connection) as queries:
        metrics = list(DomainCollector().collect())
    assert time.monotonic() - started < 2
    assert len(queries) == 0
    errors = [m for m in metrics if m.name == "composer_metrics_collect_error"]
    assert {s.labels["family"] for s in errors[0].samples} == DATABASE_FAMILIES


def test_postgresql_connections_give_up_after_a_timeout() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    assert connection.settings_dict["OPTIONS"]["connect_timeout"] >= 1
