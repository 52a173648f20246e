"""The utilisation tick's schedule and entry point: beat sends it every minute on the
housekeeping queue, and a run samples, rolls up and prunes at the worker's clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from celery.schedules import crontab
from django.utils import timezone

from composer.models import PoolSample, Resolution, TenantSample
from composer.tasks import utilisation_tick_task
from tests.factories.fabric import SmallFabric

NOW = datetime(2026, 12, 4, 23, 59, 30, tzinfo=UTC)


def test_beat_ticks_utilisation_every_minute_on_the_housekeeping_queue(settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["utilisation-tick"]
    assert entry["task"] == "composer.tasks.utilisation_tick_task"
    assert entry["schedule"] == crontab()  # every minute
    assert entry["options"]["expires"] <= 60
    assert entry["task"] in settings.COMPOSER_HOUSEKEEPING_TASKS


@pytest.mark.django_db
def test_the_task_samples_every_pool_and_tenant_at_the_clocks_minute(
    small: SmallFabric, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timezone, "now", lambda: NOW)

    assert utilisation_tick_task.delay().get() == {"pools": 2, "tenants": 1, "pruned": 0}

    minute = NOW.replace(second=0)
    buckets = set(PoolSample.objects.values_list("resolution", "bucket_start"))
    assert buckets == {
        (Resolution.MINUTE, minute),
        (Resolution.HOUR, minute.replace(minute=0)),
        (Resolution.DAY, minute.replace(hour=0, minute=0)),
    }
    assert TenantSample.objects.filter(tenant=acme, bucket_start=minute).exists()

    # The next tick is in the next day: its own minute, hour and day, and the old ones stay.
    monkeypatch.setattr(timezone, "now", lambda: NOW + timedelta(minutes=1))
    utilisation_tick_task.delay().get()
    assert PoolSample.objects.filter(resolution=Resolution.DAY).count() == 4
