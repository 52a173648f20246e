"""On SQLite (the embedded default of `make run`), web, worker and beat write one file. A
transaction that reads first and writes later must wait for another writer rather than fail
with "database is locked": every transaction takes the write lock when it begins
(`transaction_mode: IMMEDIATE`), and waits up to the busy timeout for it.

Skipped on PostgreSQL, where row locks and MVCC make this a non-question.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection, transaction

from composer.models import Tenant
from tests.factories.composer import TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_transactions_that_read_then_write_both_succeed(db: None) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL does not lock the whole database")
    tenant = TenantFactory(name="Acme", slug="acme")
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def read_then_write(suffix: str) -> None:
        try:
            barrier.wait(timeout=5)  # both begin at once
            with transaction.atomic():
                Tenant.objects.get(pk=tenant.pk)  # read first (a deferred one takes no lock)
                time.sleep(0.2)  # the other one reads meanwhile
                Tenant.objects.filter(pk=tenant.pk).update(name=f"Acme {suffix}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=read_then_write, args=(s,)) for s in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == [], errors
    assert Tenant.objects.get(pk=tenant.pk).name in {"Acme a", "Acme b"}


def test_the_sqlite_settings_begin_immediate_and_wait_for_the_lock(settings: Any) -> None:
    options = settings.DATABASES["default"].get("OPTIONS", {})
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        pytest.skip("SQLite only")
    assert options["transaction_mode"] == "IMMEDIATE" and options["timeout"] >= 5
