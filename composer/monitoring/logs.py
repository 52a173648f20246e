"""Log formats: plain lines or JSON objects (COMPOSER_LOG_FORMAT), both without secrets.

Web, workers and beat use the same formatters: Django's LOGGING names them, and Celery's
own handlers get them when its processes set up logging (`composer.monitoring.celery_hooks`).
A JSON line has `time`, `level`, `logger`, `message`, `request_id`, `process` (the pid) and,
for an error, `exception` (the traceback).

Secrets never reach a log: every formatted line goes through `redact`, which blanks the
password of a URL (`redis://:pw@host`, up to the host's "@" even when the password holds
"/" or "@"), the value after a secret's name (`password=...`, `"token": "..."`, to the
closing quote whatever it holds, bytes `b'...'` too, `Authorization: Bearer ...`) and the
deployment's own secrets wherever they appear (SECRET_KEY, the metrics token, the
credentials keys, the Redfish lab's password). A last line of defence, not a licence: code
still logs ids, not objects.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter", "PlainFormatter", "RedactingFormatter", "redact"]

MASK = "***"
# A URL's password runs to the last "@" before the host: it may hold "/" and "@" itself
# (`postgres://user:p@ss/w@db`); masking a little of a rare path with an "@" is the safe side.
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:)([^\s'\"]+)@")
# A secret's name (alone or as the end of a longer one: db_password, X-Auth-Token), then
# its value: quoted (bytes too, b'...') to the closing quote whatever it holds, else a bare
# word (with its scheme: "Bearer ...").
_NAMED_SECRET = re.compile(
    r"(?i)\b((?:[a-z0-9_-]*[_-])?(?:password|passwd|passphrase|pwd|secret|token|"
    r"api[_-]?key|private[_-]?key|credentials?|authorization|session[_-]?id|csrftoken)"
    r"[\"']?\s*[:=]\s*)"
    r"(?!\*\*\*|[\"']\*\*\*[\"'])"
    r"(b?\"(?:[^\"\\]|\\.)*\"?|b?'(?:[^'\\]|\\.)*'?"
    r"|(?:bearer |token |basic |digest |negotiate )?[^\s\"',;&}\]]+)"
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
    return _NAMED_SECRET.sub(_mask_value, text)


def _mask_value(match: re.Match[str]) -> str:
    """The secret's name, then its value masked (a quoted one keeps its quotes)."""
    value = match.group(2)
    if value[:1] in "\"'" or value[:2] in ("b'", 'b"'):
        quote = value[1] if value[0] == "b" else value[0]
        return f"{match.group(1)}{quote}{MASK}{quote}"
    return f"{match.group(1)}{MASK}"


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
