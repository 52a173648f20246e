"""The Celery app keeps a worker's database connection between tasks only while it is clean."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import connection, transaction

from composer import celery
from composer.models import Job

pytestmark = pytest.mark.django_db(transaction=True)


def _task(*, eager: bool = False) -> Any:
    return SimpleNamespace(request=SimpleNamespace(is_eager=eager))


@pytest.fixture
def persistent(monkeypatch: pytest.MonkeyPatch) -> Any:
    """An open connection that CONN_MAX_AGE would keep (SQLite's settings say 0)."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    connection.close()
    Job.objects.exists()  # any query: connects with the age above
    yield connection.connection
    connection.close()  # the next test reconnects with the settings as they were


def test_the_fixup_no_longer_closes_the_connection_after_every_task() -> None:
    assert celery.app.conf.get("CELERY_DB_REUSE_MAX")


def test_a_clean_connection_is_kept_for_the_next_task(persistent: Any) -> None:
    celery._recycle_connections(signal=task_postrun, task=_task())
    celery._recycle_connections(signal=task_prerun, task=_task())
    assert connection.connection is persistent is not None


def test_a_connection_left_busy_is_closed(persistent: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a query cut short by a time limit leaves: the server still working on it.
    monkeypatch.setattr(celery, "_idle", lambda raw: False)
    celery._recycle_connections(signal=task_postrun, task=_task())
    assert connection.connection is None


def test_a_connection_the_server_dropped_is_replaced_before_a_task(
    persistent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "is_usable", lambda: False)
    celery._recycle_connections(signal=task_prerun, task=_task())
    assert connection.connection is None


def test_an_eager_task_leaves_the_callers_transaction_alone(persistent: Any) -> None:
    with transaction.atomic():
        celery._recycle_connections(signal=task_postrun, task=_task(eager=True))
        assert connection.connection is persistent and connection.in_atomic_block
