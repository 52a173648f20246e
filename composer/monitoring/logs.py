"""Log formats: plain lines or JSON objects (COMPOSER_LOG_FORMAT), both without secrets.

Web, workers and beat use the same formatters: Django's LOGGING names them, and Celery's
own handlers get them when its processes set up logging (`composer.monitoring.celery_hooks`).
A JSON line has `time`, `level`, `logger`, `message`, `request_id`, `process` (the pid) and,
for an error, `exception` (the traceback).

Secrets never reach a log: every formatted line goes through `redact`, which blanks the
password of a URL (`redis://:pw@host`), the value after a secret's name (`password=...`,
`"token": "..."`, `Authorization: Bearer ...`) and the deployment's own secrets wherever
they appear (SECRET_KEY, the metrics token, the credentials keys, the Redfish lab's
password). A last line of defence, not a licence: code still logs ids, not objects.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter", "PlainFormatter", "RedactingFormatter", "redact"]

MASK = "***"
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)@")
_NAMED_SECRET = re.compile(
    r"(?i)\b((?:[a-z_]*_)?(?:password|passwd|secret|token|api[_-]?key|credentials?|"
    r"authorization|session[_-]?id|csrftoken)[\"']?\s*[:=]\s*[\"']?)"
    r"(?!\*\*\*)((?:bearer |token |basic )?[^\s\"',;&}\]]+)"
)
_SCHEME_SECRET = re.compile(r"(?i)\b(Bearer|Token|Basic)\s+(?!\*\*\*)[A-Za-z0-9._~+/=-]{8,}")
# Shorter values are words, not secrets ("demo" is a demo's password and a common word).
_MIN_SECRET_LEN = 8


def _configured_secrets() -> list[str]:
    """The deployment's own secrets, longest first (read when a line is formatted: settings
    may not be loaded when logging is configured)."""
    try:
        from django.conf import settings

        values: list[Any] = [
            getattr(settings, "SECRET_KEY", ""),
            getattr(settings, "COMPOSER_METRICS_TOKEN", ""),
            getattr(settings, "COMPOSER_SIMULATOR_REDFISH_PASSWORD", ""),
            *getattr(settings, "COMPOSER_CREDENTIALS_KEYS", []),
        ]
    except Exception:  # settings not configured (a bare script): patterns only
        return []
    return sorted(
        {v for v in values if isinstance(v, str) and len(v) >= _MIN_SECRET_LEN},
        key=len,
        reverse=True,
    )


def redact(text: str) -> str:
    """`text` with every secret it carries replaced by ***."""
    for secret in _configured_secrets():
        if secret in text:
            text = text.replace(secret, MASK)
    text = _URL_PASSWORD.sub(rf"\g<1>{MASK}@", text)
    text = _SCHEME_SECRET.sub(rf"\g<1> {MASK}", text)
    return _NAMED_SECRET.sub(rf"\g<1>{MASK}", text)


class PlainFormatter(logging.Formatter):
    """Django's plain format, redacted."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class RedactingFormatter(logging.Formatter):
    """Wraps another formatter (Celery's own) and redacts what it writes."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line, redacted."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
            "request_id": getattr(record, "request_id", None) or "-",
            "process": record.process,
        }
        task_id = getattr(record, "task_id", None)
        if task_id:
            line["task_id"] = task_id
        if record.exc_info:
            line["exception"] = redact(self.formatException(record.exc_info))
        elif record.exc_text:
            line["exception"] = redact(record.exc_text)
        return json.dumps(line, ensure_ascii=False, default=str)
