"""Tenants, memberships, templates and quotas edited in the admin are audited: the operator,
their address, each field before and after, deletions too (one page, a bulk delete, an
inline row)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from composer.choices import Role
from composer.models import ChangeAudience, Membership, Quota, Template, Tenant
from fabric.models import ChangeRecord

pytestmark = pytest.mark.django_db

ADDR = "203.0.113.9"


@pytest.fixture
def operator(db: None) -> Any:
    return get_user_model().objects.create_superuser("op", "op@example.com", "pw")


@pytest.fixture
def admin_client(operator: Any) -> Client:
    client = Client(REMOTE_ADDR=ADDR)
    client.force_login(operator)
    return client


def _tenant_form(tenant: Tenant, members: list[Membership], **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": tenant.name,
        "slug": tenant.slug,
        "is_active": "on" if tenant.is_active else "",
        "memberships-TOTAL_FORMS": str(len(members)),
        "memberships-INITIAL_FORMS": str(len(members)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for i, m in enumerate(members):
        data |= {
            f"memberships-{i}-id": str(m.pk),
            f"memberships-{i}-tenant": str(tenant.pk),
            f"memberships-{i}-user": str(m.user_id),
            f"memberships-{i}-role": m.role,
        }
    return data | changes


def test_a_tenant_edited_in_the_admin_is_audited_with_its_inline_memberships(
    admin_client: Client, operator: Any, alice: Any, acme: Any
) -> None:
    membership = Membership.objects.get(user=alice, tenant=acme)
    url = reverse("admin:composer_tenant_change", args=[acme.pk])
    data = _tenant_form(acme, [membership], name="Acme Corp", **{"memberships-0-role": "readonly"})
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    tenant = ChangeRecord.objects.get(target_type="tenant")
    assert (tenant.target_id, tenant.action) == (acme.pk, "changed")
    assert tenant.changes == {"name": ["Acme", "Acme Corp"]}
    assert (tenant.actor, tenant.source, tenant.remote_addr) == (operator, "admin", ADDR)
    member = ChangeRecord.objects.get(target_type="membership")
    assert (member.target_id, member.action) == (membership.pk, "changed")
    assert member.changes == {"role": ["admin", "readonly"]}
    assert member.remote_addr == ADDR


def test_an_inline_membership_deleted_in_the_admin_is_audited(
    admin_client: Client, alice: Any, acme: Any
) -> None:
    membership = Membership.objects.get(user=alice, tenant=acme)
    url = reverse("admin:composer_tenant_change", args=[acme.pk])
    data = _tenant_form(acme, [membership], **{"memberships-0-DELETE": "on"})
    assert admin_client.post(url, data).status_code == 302
    record = ChangeRecord.objects.get(target_type="membership")
    assert (record.action, record.target_id) == ("deleted", membership.pk)
    assert record.target_label == "alice in Acme (admin)"


def test_a_membership_edited_on_its_own_page_names_the_tenant_before_and_after(
    admin_client: Client, alice: Any, acme: Any, globex: Any
) -> None:
    membership = Membership.objects.get(user=alice, tenant=acme)
    url = reverse("admin:composer_membership_change", args=[membership.pk])
    data = {"user": str(alice.pk), "tenant": str(globex.pk), "role": Role.MEMBER}
    assert admin_client.post(url, data).status_code == 302
    record = ChangeRecord.objects.get(target_type="membership")
    assert record.changes == {"tenant": ["Acme", "Globex"], "role": ["admin", "member"]}
    assert record.remote_addr == ADDR


def test_templates_and_quotas_deleted_in_bulk_in_the_admin_are_audited(
    admin_client: Client, acme: Any
) -> None:
    template = Template.objects.create(name="t", slug="t", spec={"items": []})
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=8)
    for model, obj in (("template", template), ("quota", quota)):
        response = admin_client.post(
            reverse(f"admin:composer_{model}_changelist"),
            {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"},
        )
        assert response.status_code == 302
        record = ChangeRecord.objects.get(target_type=model)
        assert (record.action, record.target_id, record.remote_addr) == ("deleted", obj.pk, ADDR)
    assert list(ChangeAudience.objects.values_list("tenant", flat=True)) == [acme.pk]


def test_a_quota_changed_in_the_admin_is_its_tenants_to_read(
    admin_client: Client, acme: Any
) -> None:
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=8)
    url = reverse("admin:composer_quota_change", args=[quota.pk])
    data = {"tenant": str(acme.pk), "kind": "gpu", "model": "", "max_count": "12"}
    assert admin_client.post(url, data).status_code == 302
    record = ChangeRecord.objects.get(target_type="quota")
    assert record.changes == {"max_count": [8, 12]}
    assert ChangeAudience.objects.get().tenant == acme
