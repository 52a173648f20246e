"""The request id: one per HTTP request, carried into the Celery tasks it enqueues.

Set by `composer.monitoring.middleware.RequestMiddleware` (from the client's `X-Request-ID`
when it is a plain token, else a new one) and answered in the response's `X-Request-ID`;
every log line of the request carries it (`RequestIdFilter`). A task sent meanwhile (a job
enqueued after the request's commit) carries it in a message header, and the worker
restores it for the task's run (`composer.monitoring.celery_hooks`), so one id finds a
compose's lines in the web's log and in the worker's.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar, Token

__all__ = [
    "HEADER",
    "RequestIdFilter",
    "request_id",
    "request_id_clean",
    "request_id_new",
    "request_id_reset",
    "request_id_set",
]

# The Celery message header that carries it.
HEADER = "composer_request_id"

_CURRENT: ContextVar[str | None] = ContextVar("composer_request_id", default=None)
# What a client may send as its own id: a plain token (no spaces, quotes or newlines that
# would forge a log line), as load balancers and tracing proxies make them.
_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")


def request_id() -> str | None:
    """The id of the request (or task) this code runs for, if any."""
    return _CURRENT.get()


def request_id_set(value: str | None) -> Token[str | None]:
    """Make `value` the current id; hand the token to `request_id_reset` when done."""
    return _CURRENT.set(value)


def request_id_reset(token: Token[str | None]) -> None:
    _CURRENT.reset(token)


def request_id_new() -> str:
    return uuid.uuid4().hex


def request_id_clean(raw: object) -> str | None:
    """`raw` when it is an acceptable id (from a client or a message header), else None."""
    if isinstance(raw, str) and _VALID.fullmatch(raw):
        return raw
    return None


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record ("-" outside a request or task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _CURRENT.get() or "-"
        return True
