"""The admin's users, audited: who was made an operator (staff), superuser or inactive,
by whom and from where, like every other change of state; and their API tokens, which an
operator may revoke.

Django registers its own UserAdmin, which writes no ChangeRecord; this replaces it with one
built on the fabric's AuditedAdmin. Passwords never reach the trail: the add form's
password fields and the password page are recorded as "set", with no value.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from composer.models import ApiToken
from composer.services.api_tokens import api_token_revoke
from fabric.admin import AuditedAdmin, ReadOnlyAdmin
from fabric.choices import ChangeAction
from fabric.models import ChangeRecord
from fabric.services.history import change_record

__all__ = ["HIDDEN", "ApiTokenAdmin", "AuditedUserAdmin"]

HIDDEN = "(set, not shown)"
# The user forms' fields that hold a password: recorded as set, never with a value.
_SECRET_FIELDS = frozenset({"password", "password1", "password2", "usable_password"})


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(AuditedAdmin, UserAdmin):
    """Django's user admin, every add, change, delete and password set recorded."""

    def keep_record(self, record: ChangeRecord, obj: Any) -> None:
        secret = _SECRET_FIELDS.intersection(record.changes)
        for field in secret:
            record.changes.pop(field)
        if secret:
            record.changes["password"] = ["", HIDDEN]
        record.save()

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> HttpResponse:
        """The password page: a set password is recorded (never its value), in the
        transaction that saves it."""
        with transaction.atomic():
            response = super().user_change_password(request, id, form_url)
            if request.method == "POST" and response.status_code == 302:
                user = self.get_object(request, unquote(id))
                if user is not None:
                    record = change_record(
                        user,
                        ChangeAction.CHANGED,
                        {"password": ("", HIDDEN)},
                        message="password set in the admin",
                        actor=request.user,
                        source="admin",
                        remote_addr=request.META.get("REMOTE_ADDR") or None,
                    )
                    record.save()
        return response


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Whose API tokens, from where, last used when; never the key's digest. An operator
    revokes them here (a user who left, a key that leaked), each revocation audited as the
    operator's; deactivating the user stops them all at once too."""

    list_display = ("id", "user", "name", "created_at", "last_used_at", "expires_at", "remote_addr")
    fields = list_display
    list_select_related = ("user",)
    search_fields = ("user__username", "name")
    actions = ["revoke"]

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        """No filtering on the digest from the URL (`?key_sha256__startswith=…` would read it
        out one character at a time)."""
        if lookup.split("__", 1)[0] == "key_sha256":
            return False
        return bool(super().lookup_allowed(lookup, value, request))

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        """Revoking is deleting: viewing tokens is not enough."""
        return bool(request.user.has_perm("composer.delete_apitoken"))

    @admin.action(description="Revoke selected API tokens", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = sum(
            api_token_revoke(
                user=token.user,
                token=token,
                remote_addr=request.META.get("REMOTE_ADDR") or None,
                actor=request.user,
                source="admin",
            )
            for token in queryset.select_related("user")
        )
        self.message_user(request, f"{revoked} API token(s) revoked.")
