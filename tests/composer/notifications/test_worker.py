"""A webhook delivered by a real Celery worker process (no eager mode): the task goes to the
broker after the commit, the worker signs and posts, and records the outcome."""

from __future__ import annotations

import time
from typing import Any

import pytest

from composer.notifications import Actor, signature_verify, webhook_create, webhook_test

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_real_worker_delivers_a_signed_webhook(
    celery_worker: Any, admin_user: Any, receiver: Any
) -> None:
    server = receiver(200)
    actor = Actor(user=admin_user, source="test")
    hook, secret = webhook_create(tenant=None, name="noc", url=server.url, actor=actor)
    delivery = webhook_test(webhook=hook, actor=actor)  # autocommit: sent after its commit
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        delivery.refresh_from_db()
        if delivery.status != "pending":
            break
        time.sleep(0.2)
    assert delivery.status == "delivered", f"{delivery.error}\n{celery_worker.log()}"
    [request] = server.received
    assert signature_verify(
        header=request.headers["X-Composer-Signature"], secret=str(secret), body=request.body
    )
    assert "notification_deliver_task" in celery_worker.log()
