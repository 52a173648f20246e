"""The composer admin: tenants with members, jobs with their read-only log."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from composer.choices import JobKind, JobStatus, Role
from composer.models import (
    AlertAudience,
    Allocation,
    ApiToken,
    Booking,
    BookingHold,
    ChangeAudience,
    Composition,
    Event,
    EventAudience,
    Job,
    JobLogLine,
    KubernetesClaim,
    KubernetesController,
    Membership,
    NotificationDelivery,
    NotificationRoute,
    Occurrence,
    Quota,
    ReconcileFinding,
    ReconcileRun,
    ReconcileTrigger,
    RedfishSession,
    ServerShape,
    Silence,
    StateChange,
    Template,
    Tenant,
    UnbindPending,
    Webhook,
)
from composer.services.api_tokens import api_token_issue
from composer.services.utilisation import utilisation_tick
from fabric.models import Alert, ChangeRecord, FabricManager
from fabric.services.pools import pools_assign, pools_ensure_defaults
from tests.factories.fabric import DeviceFactory, HostFactory

COMPOSER_MODELS = list(apps.get_app_config("composer").get_models())


@pytest.fixture
def operator_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("op", "op@example.com", "pw")
    tenant = Tenant.objects.create(name="Acme", slug="acme")
    Membership.objects.create(user=user, tenant=tenant, role=Role.ADMIN)
    job = Job.objects.create(kind=JobKind.INVENTORY_SYNC, target_label="demo")
    JobLogLine.objects.create(job=job, at=job.created_at, level="INFO", message="hello")
    Template.objects.create(name="t", slug="t", spec={"items": [{"kind": "gpu", "count": 1}]})
    quota = Quota.objects.create(tenant=tenant, kind="gpu", max_count=8)
    record = ChangeRecord.objects.create(
        target_type="quota", target_id=quota.pk, target_label=str(quota), action="changed"
    )
    ChangeAudience.objects.create(record=record, tenant=tenant)
    composition = Composition.objects.create(tenant=tenant, name="c1", spec={})
    device = DeviceFactory.create()
    Allocation.objects.create(composition=composition, device=device)
    run = ReconcileRun.objects.create(trigger=ReconcileTrigger.SCHEDULE)
    ReconcileFinding.objects.create(
        run=run, kind="orphan", outcome="repaired", device=device, action="Unbound it"
    )
    host = HostFactory.create(manager=device.manager)
    UnbindPending.objects.create(device=device, host=host, binding_id="b-1")
    StateChange.objects.create(composition=composition, to_state="requested", reason="test")
    window = (now_ := timezone.now(), now_ + timedelta(hours=1))
    booking = Booking.objects.create(
        tenant=tenant, name="b", spec={}, starts_at=window[0], ends_at=window[1]
    )
    occurrence = Occurrence.objects.create(
        booking=booking, starts_at=window[0], ends_at=window[1], host=host
    )
    BookingHold.objects.create(
        occurrence=occurrence, device=device, host=host, starts_at=window[0], ends_at=window[1]
    )
    event = Event.objects.create(type="composition.state", composition=composition, payload={})
    EventAudience.objects.create(event=event, tenant=tenant)
    now = timezone.now()
    alert = Alert.objects.create(
        manager=FabricManager.objects.create(name="fm", driver="simulated", endpoint="sim://x"),
        source_type="switch",
        source_id=1,
        source_name="sw-1",
        rule="failed",
        severity="critical",
        message="sw-1 failed",
        opened_at=now,
        last_seen_at=now,
    )
    AlertAudience.objects.create(alert=alert, tenant=tenant)
    api_token_issue(user=user, remote_addr="198.51.100.7")
    RedfishSession.objects.create(
        public_id="0123abcd",
        token_sha256="f" * 64,
        auth_hash=user.get_session_auth_hash(),
        user=user,
        last_used_at=now,
    )
    hook = Webhook.objects.create(
        tenant=tenant, name="hook", url="https://h.example/", secret_ciphertext="gAAAA-secret"
    )
    route = NotificationRoute.objects.create(tenant=tenant, name="route", webhook=hook)
    Silence.objects.create(rule="temperature", ends_at=now + timedelta(hours=1), reason="work")
    NotificationDelivery.objects.create(
        route=route, webhook=hook, channel="webhook", event="test", body="{}", body_sha256="0"
    )
    ServerShape.objects.create(name="8-GPU", gpus=8, cores=96, memory_gib=512)
    KubernetesClaim.objects.create(
        uid="u-1", namespace="ml", name="gpus", node="node-1", composition=composition
    )
    KubernetesController.objects.create(identity="replica-a", driver="fabric.composer.dev")
    pools_ensure_defaults(manager=device.manager)
    pools_assign(manager=device.manager, source="test")
    utilisation_tick(now=now)  # a pool's, a kind's and the tenant's sample
    client = Client()
    client.force_login(user)
    return client


def test_the_webhook_page_shows_no_secret(operator_client: Client) -> None:
    hook = Webhook.objects.get()
    response = operator_client.get(reverse("admin:composer_webhook_change", args=[hook.pk]))
    assert response.status_code == 200 and b"gAAAA-secret" not in response.content


def test_every_composer_model_is_registered() -> None:
    assert set(COMPOSER_MODELS) <= set(admin.site._registry)


@pytest.mark.parametrize("model", COMPOSER_MODELS, ids=lambda m: m.__name__)
def test_every_composer_admin_page_renders(operator_client: Client, model: Any) -> None:
    name = f"admin:composer_{model._meta.model_name}"
    assert operator_client.get(reverse(f"{name}_changelist")).status_code == 200
    obj = model.objects.first()
    response = operator_client.get(reverse(f"{name}_change", args=[obj.pk]))
    assert response.status_code == 200
    if model is Job:
        assert b"hello" in response.content


def test_queued_jobs_can_be_cancelled_from_the_admin(operator_client: Client) -> None:
    job = Job.objects.get()
    operator_client.post(
        reverse("admin:composer_job_changelist"),
        {"action": "cancel_queued", "_selected_action": [job.pk]},
    )
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.message == "Cancelled by op"


def test_the_api_token_page_shows_no_digest_and_revokes_as_the_operator(
    operator_client: Client,
) -> None:
    token = ApiToken.objects.get()
    page = operator_client.get(reverse("admin:composer_apitoken_change", args=[token.pk]))
    assert b"198.51.100.7" in page.content and token.key_sha256.encode() not in page.content
    listing = operator_client.get(reverse("admin:composer_apitoken_changelist"))
    assert token.key_sha256.encode() not in listing.content
    operator_client.post(
        reverse("admin:composer_apitoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk]},
        REMOTE_ADDR="203.0.113.9",
    )
    assert not ApiToken.objects.exists()
    record = ChangeRecord.objects.get(target_type="api_token", action="deleted")
    assert (record.actor.username, record.source, record.remote_addr) == (
        "op",
        "admin",
        "203.0.113.9",
    )
    assert record.message == f"API token {token.pk} revoked"


def test_the_api_token_digest_cannot_be_filtered_on(operator_client: Client) -> None:
    token = ApiToken.objects.get()
    url = reverse("admin:composer_apitoken_changelist")
    response = operator_client.get(url, {"key_sha256__startswith": token.key_sha256[:3]})
    assert response.status_code == 400


def test_a_staff_member_who_may_only_view_tokens_cannot_revoke_them(
    operator_client: Client,
) -> None:
    from django.contrib.auth.models import Permission

    viewer = get_user_model().objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_apitoken"))
    client = Client()
    client.force_login(viewer)
    url = reverse("admin:composer_apitoken_changelist")
    listing = client.get(url)
    assert listing.status_code == 200 and b"Revoke selected" not in listing.content
    client.post(url, {"action": "revoke", "_selected_action": [ApiToken.objects.get().pk]})
    assert ApiToken.objects.count() == 1


def test_the_redfish_session_page_shows_no_token_digest_nor_session_hash(
    operator_client: Client,
) -> None:
    session = RedfishSession.objects.get()
    url = reverse("admin:composer_redfishsession_change", args=[session.pk])
    page = operator_client.get(url).content.decode()
    assert session.public_id in page
    assert session.token_sha256 not in page and session.auth_hash not in page
