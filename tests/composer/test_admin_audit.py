"""Tenants, memberships, templates, quotas and users edited in the admin are audited: the
operator, their address, each field before and after, deletions too (one page, a bulk
delete, an inline row). A password set is recorded as set, never with its value or hash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from django.utils.timezone import localtime

from composer.admin_users import HIDDEN
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


# Users: who is an operator is a change of state like any other.

PASSWORD = "Correct-Horse-Battery-9"


def _change_form(user: Any, **changes: Any) -> dict[str, Any]:
    # The form shows whole seconds: the stored time too, or it would read as a change.
    type(user).objects.filter(pk=user.pk).update(
        date_joined=user.date_joined.replace(microsecond=0)
    )
    user.refresh_from_db()
    data = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": "on" if user.is_active else "",
        "is_staff": "on" if user.is_staff else "",
        "is_superuser": "on" if user.is_superuser else "",
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": localtime(user.date_joined).strftime("%Y-%m-%d"),
        "date_joined_1": localtime(user.date_joined).strftime("%H:%M:%S"),
        "groups": [str(g.pk) for g in user.groups.all()],
    }
    return {k: v for k, v in (data | changes).items() if v != ""}


def test_making_a_user_an_operator_is_audited_with_the_groups_by_name(
    admin_client: Client, operator: Any, alice: Any
) -> None:
    night = Group.objects.create(name="night shift")
    url = reverse("admin:auth_user_change", args=[alice.pk])
    response = admin_client.post(url, _change_form(alice, is_staff="on", groups=[str(night.pk)]))
    assert response.status_code == 302, response.content.decode()[:3000]
    alice.refresh_from_db()
    assert alice.is_staff and list(alice.groups.all()) == [night]
    record = ChangeRecord.objects.get(target_type="user", target_id=alice.pk)
    assert record.action == "changed"
    assert record.changes == {"is_staff": [False, True], "groups": [[], ["night shift"]]}
    assert (record.actor, record.source, record.remote_addr) == (operator, "admin", ADDR)


def test_a_user_added_in_the_admin_is_audited_without_the_password(
    admin_client: Client,
) -> None:
    response = admin_client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "dave",
            "password1": PASSWORD,
            "password2": PASSWORD,
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    dave = get_user_model().objects.get(username="dave")
    record = ChangeRecord.objects.get(target_type="user", target_id=dave.pk)
    assert record.action == "added"
    assert record.changes["password"] == ["", HIDDEN]
    stored = json.dumps(record.changes) + record.message
    assert PASSWORD not in stored and dave.password not in stored
    assert "password1" not in record.changes and "password2" not in record.changes


def test_a_password_set_in_the_admin_is_audited_as_set(
    admin_client: Client, operator: Any, alice: Any
) -> None:
    url = reverse("admin:auth_user_password_change", args=[alice.pk])
    response = admin_client.post(url, {"password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302, response.content.decode()[:3000]
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)
    record = ChangeRecord.objects.get(target_type="user", target_id=alice.pk)
    assert record.changes == {"password": ["", HIDDEN]}
    assert record.message == "password set in the admin"
    assert (record.actor, record.remote_addr) == (operator, ADDR)
    assert PASSWORD not in json.dumps(record.changes) and alice.password not in json.dumps(
        record.changes
    )


def test_a_refused_password_is_not_recorded(admin_client: Client, alice: Any) -> None:
    url = reverse("admin:auth_user_password_change", args=[alice.pk])
    response = admin_client.post(url, {"password1": PASSWORD, "password2": "something else"})
    assert response.status_code == 200
    assert not ChangeRecord.objects.filter(target_type="user").exists()


def test_a_user_deleted_in_the_admin_is_audited(admin_client: Client, alice: Any) -> None:
    pk = alice.pk
    response = admin_client.post(reverse("admin:auth_user_delete", args=[pk]), {"post": "yes"})
    assert response.status_code == 302
    record = ChangeRecord.objects.get(target_type="user", target_id=pk)
    assert (record.action, record.target_label) == ("deleted", "alice")


def test_users_show_on_the_audit_page(admin_client: Client, alice: Any) -> None:
    url = reverse("admin:auth_user_change", args=[alice.pk])
    admin_client.post(url, _change_form(alice, is_staff="on"))
    page = admin_client.get(reverse("composer:audit_list"), {"kind": "user"}).content.decode()
    assert '<option value="user" selected>User</option>' in page
    assert "alice" in page and "is_staff" in page
