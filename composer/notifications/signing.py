"""Webhook signatures: HMAC-SHA256 of the timestamp and the body, with the webhook's secret.

Each POST carries `X-Composer-Signature: t=<unix seconds>,v1=<hex digest>`, where the digest
is HMAC-SHA256(secret, f"{t}.".encode() + body). The timestamp is signed so that a captured
request cannot be replayed later: a receiver checks the digest (in constant time) and that
`t` is recent (five minutes by default). The scheme is Stripe's, so receivers may already
know it; docs/notifications.md has a verification snippet. Pure Python, no Django.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

__all__ = [
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "SIGNATURE_HEADER",
    "SIGNATURE_TOLERANCE_S",
    "new_secret",
    "signature_header",
    "signature_verify",
]

SIGNATURE_HEADER = "X-Composer-Signature"
DELIVERY_HEADER = "X-Composer-Delivery"  # the delivery's id: the same on every retry
EVENT_HEADER = "X-Composer-Event"  # "alert.opened", "alert.escalated", "alert.closed", "test"
SIGNATURE_TOLERANCE_S = 300
SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret: 32 random bytes, URL-safe, with a prefix that says what it is
    (so that one pasted in the wrong place is recognised)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(*, secret: str, body: bytes, timestamp: int) -> str:
    """The `X-Composer-Signature` value for `body` sent at `timestamp` (unix seconds)."""
    return f"t={timestamp},v1={_digest(secret, timestamp, body)}"


def signature_verify(
    *,
    header: str,
    secret: str,
    body: bytes,
    now: float | None = None,
    tolerance_s: int = SIGNATURE_TOLERANCE_S,
) -> bool:
    """Whether `header` signs `body` with `secret` within `tolerance_s` of `now`.

    What a receiver does; here for the tests and for anyone writing one in Python. Any `v1`
    entry may match (a receiver may be sent several while a secret is rotated).
    """
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == "v1" and value:
            signatures.append(value)
    if timestamp is None or not signatures:
        return False
    moment = time.time() if now is None else now
    if abs(moment - timestamp) > tolerance_s:
        return False
    expected = _digest(secret, timestamp, body)
    return any(hmac.compare_digest(expected, given) for given in signatures)
