"""API tokens issued and revoked, each audited as a Redfish session is.

A token is a credential: its record says whose token, who asked and from where, never the
key (the token's primary key, so the record names the user's id instead, and `changes`
stays empty).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from rest_framework.authtoken.models import Token

from fabric.choices import ChangeAction
from fabric.services.history import change_record

__all__ = ["API_TOKEN", "api_token_issue", "api_token_revoke"]

API_TOKEN = "api_token"  # the ChangeRecord target_type

logger = logging.getLogger(__name__)


def _record(user: Any, action: ChangeAction, message: str, remote_addr: str | None) -> None:
    record = change_record(
        user,
        action,
        label=f"API token of {user.get_username()}",
        message=message,
        actor=user,
        source="api",
        remote_addr=remote_addr,
    )
    record.target_type = API_TOKEN
    record.save()


def api_token_issue(*, user: Any, remote_addr: str | None) -> Token:
    """The user's token, issued (and audited) if it has none; the same one if it has."""
    with transaction.atomic():
        token, created = Token.objects.get_or_create(user=user)
        if created:
            _record(user, ChangeAction.ADDED, "API token issued", remote_addr)
            logger.info("api token issued user_id=%s", user.pk)
    return token


def api_token_revoke(*, user: Any, remote_addr: str | None) -> bool:
    """Delete the user's token (audited); False when it had none."""
    with transaction.atomic():
        deleted, _ = Token.objects.filter(user=user).delete()
        if deleted:
            _record(user, ChangeAction.DELETED, "API token revoked", remote_addr)
            logger.info("api token revoked user_id=%s", user.pk)
    return bool(deleted)
