"""API tokens issued, found and revoked, each change audited as a Redfish session's is.

A key is shown once, in the answer to the POST that issues it; the database keeps only its
SHA-256 (`composer.models.ApiToken`), so neither a copy of the table nor the admin shows a
key that works. Every POST issues a new token: two scripts of one user each hold their own,
and revoking one leaves the other working. A user holds at most
`COMPOSER_API_TOKENS_PER_USER`; issuing one more revokes the least recently used, where a
Redfish login past its limit is refused: tokens lapse only when given a lifetime, and a
script that signs in on every run and never revokes would otherwise lock its user out of
the API for good. An expired token stops working at once, is shown as expired, and is
deleted (audited) when its user is next issued one.

A token is a credential: its record says whose token, which one (its id), who asked and
from where, never the key; the record's target is the user, and `changes` stays empty.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from composer.models import ApiToken
from fabric.choices import ChangeAction
from fabric.models import ChangeRecord
from fabric.services.history import change_record

__all__ = [
    "API_TOKEN",
    "MAX_DAYS",
    "Issued",
    "api_token_find",
    "api_token_held",
    "api_token_issue",
    "api_token_revoke",
    "digest",
]

API_TOKEN = "api_token"  # the ChangeRecord target_type
# The last-used time is written at most this often per token (not on every request).
TOUCH_EVERY = timedelta(seconds=30)
MAX_DAYS = 3650  # the longest lifetime a token may be given (ten years)

logger = logging.getLogger(__name__)


def digest(key: str) -> str:
    """What the database keeps of a key: of an API token's, and of a Redfish session's
    (`composer.redfish.sessions`). Keys are random, so one round of SHA-256 is enough."""
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()


def _record(
    user: Any,
    action: ChangeAction,
    message: str,
    remote_addr: str | None,
    actor: Any = None,
    source: str = "api",
) -> Any:
    record = change_record(
        user,
        action,
        label=f"API token of {user.get_username()}",
        message=message,
        actor=actor or user,
        source=source,
        remote_addr=remote_addr,
    )
    record.target_type = API_TOKEN
    return record


@dataclass(frozen=True)
class Issued:
    """A token just issued, its key (shown once, kept nowhere), and the ids of the user's
    tokens it pushed past the limit (revoked)."""

    token: ApiToken
    key: str = field(repr=False)
    revoked: tuple[int, ...] = ()


def api_token_issue(
    *,
    user: Any,
    remote_addr: str | None,
    name: str = "",
    lifetime: timedelta | None = None,
    source: str = "api",
) -> Issued:
    """A new token for `user`, valid for `lifetime` (None: until revoked), audited. In the
    same transaction the user's expired tokens are deleted, and the least recently used
    beyond the limit revoked."""
    key = secrets.token_hex(20)  # 40 hexadecimal digits: the shape clients know
    limit = max(1, settings.COMPOSER_API_TOKENS_PER_USER)
    with transaction.atomic():
        # One issue at a time per user, so that two at once cannot both keep limit + 1.
        # NO KEY: rows that only refer to the user (audit records, jobs) are not held up.
        get_user_model().objects.select_for_update(no_key=True).filter(pk=user.pk).exists()
        now = timezone.now()
        token = ApiToken.objects.create(
            key_sha256=digest(key),
            user=user,
            name=name,
            remote_addr=remote_addr,
            expires_at=now + lifetime if lifetime is not None else None,
        )
        expired = list(ApiToken.objects.filter(user=user, expires_at__lte=now))
        used = Coalesce("last_used_at", "created_at")  # a token never used: since its issue
        # The others only: a token used a moment after this one was made (or stamped by a
        # web server whose clock runs ahead) must not push the new one out.
        others = ApiToken.objects.filter(user=user).exclude(pk=token.pk).live(now)
        surplus = list(others.order_by(used.desc(), "-id")[limit - 1 :])
        records = [
            _record(user, ChangeAction.DELETED, f"API token {old.pk} expired", None, source=source)
            for old in expired
        ]
        records += [
            _record(
                user,
                ChangeAction.DELETED,
                f"API token {old.pk} revoked: the least recently used of more than {limit}",
                remote_addr,
                source=source,
            )
            for old in surplus
        ]
        issued = f"API token {token.pk} issued" + (f" ({name})" if name else "")
        records.append(_record(user, ChangeAction.ADDED, issued, remote_addr, source=source))
        ChangeRecord.objects.bulk_create(records)
        ApiToken.objects.filter(pk__in=[old.pk for old in [*expired, *surplus]]).delete()
    logger.info("api token issued user_id=%s token_id=%s", user.pk, token.pk)
    return Issued(token, key, tuple(old.pk for old in surplus))


def api_token_find(key: str) -> ApiToken | None:
    """The token whose key is `key`, with its user, or None (none, or expired); marks it
    used."""
    token = ApiToken.objects.select_related("user").filter(key_sha256=digest(key)).first()
    now = timezone.now()
    if token is None or (token.expires_at is not None and token.expires_at <= now):
        return None
    if token.last_used_at is None or now - token.last_used_at >= TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def api_token_held(key: str, user_id: int) -> bool:
    """Whether `key` is still a token of the user `user_id` (not revoked, not expired)."""
    return ApiToken.objects.filter(key_sha256=digest(key), user_id=user_id).live().exists()


def api_token_revoke(
    *,
    user: Any,
    token: ApiToken | None,
    remote_addr: str | None,
    actor: Any = None,
    source: str = "api",
) -> int:
    """Revoke `token`, or every token of `user` when it is None (audited, one record per
    token, by `actor`: the user itself unless an operator revokes); how many went."""
    with transaction.atomic():
        tokens = ApiToken.objects.filter(user=user)
        if token is not None:
            tokens = tokens.filter(pk=token.pk)
        gone = list(tokens.select_for_update().values_list("pk", flat=True))
        ChangeRecord.objects.bulk_create(
            _record(
                user, ChangeAction.DELETED, f"API token {pk} revoked", remote_addr, actor, source
            )
            for pk in gone
        )
        ApiToken.objects.filter(pk__in=gone).delete()
    if gone:
        logger.info("api token revoked user_id=%s tokens=%s", user.pk, len(gone))
    return len(gone)
