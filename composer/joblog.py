"""A job's log: what the work logs while it runs is stored as JobLogLine rows, each for
operators only or also for the job's tenant.

`composer.runner` captures the log of every job it runs (`capture_logs`): loggers under
"fabric" and "composer", INFO and up, from the job's own thread and the helper threads it
adopts (`job_log_adopter`). Lines reach the database at most once per
PROGRESS_INTERVAL_S, counted from the start, and the last ones always do.

Who reads a log line is decided where it is logged. Operators read every line as logged.
The job's tenant reads only the lines logged with `extra=for_tenants(...)`, in the words
given there: a driver's lines and fabric code's (loggers under "fabric") name the manager,
switches and ports, and stay with operators whatever they pass, and so does any composer
line that does not say it is fit for tenants (a traceback, a binding id, another
composition). A new logging call is thus operators' only until its author words it for
tenants.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from django.db import connection

from composer.models import Job, JobLogLine

__all__ = [
    "MAX_LOG_LINES",
    "PROGRESS_INTERVAL_S",
    "JobLogHandler",
    "capture_logs",
    "for_tenants",
    "job_log_adopter",
]

CAPTURED_LOGGERS = ("fabric", "composer")
# Loggers whose lines a tenant never reads: fabric code speaks of the fabric's own elements.
OPERATOR_LOGGERS = ("fabric",)
PROGRESS_INTERVAL_S = 1.0
MAX_LOG_LINES = 5000
MAX_LINE_CHARS = 4000

_TENANT_WORDS = "tenant_words"  # the LogRecord attribute `for_tenants` sets
_SAME_WORDS = True


def for_tenants(words: str | None = None) -> dict[str, object]:
    """`extra=` for a logging call of a job whose line the job's tenant reads too: in
    `words`, or (without them) in the line's own words, when those name nothing of the
    fabric's internals (no switch, port, link, manager, binding id; devices and the host
    of the tenant's own composition are theirs to read).

        logger.info("bound %s to %s (%s)", name, host, binding_id,
                    extra=for_tenants(f"Bound GPU {name} to {host}"))
    """
    return {_TENANT_WORDS: _SAME_WORDS if words is None else words}


def _tenant_text(record: logging.LogRecord) -> str:
    """The line of `record` as the job's tenant reads it; "" when it is operators' only."""
    words = getattr(record, _TENANT_WORDS, None)
    if words is None or record.name.split(".", 1)[0] in OPERATOR_LOGGERS:
        return ""
    # The record's own message, never the formatted one: that carries any traceback.
    return record.getMessage() if words is _SAME_WORDS else str(words)


class JobLogHandler(logging.Handler):
    """Stores the job thread's log records as JobLogLine rows.

    Records are buffered and written together: by a record that comes at least
    PROGRESS_INTERVAL_S after the last write, by a progress write, and at the end of the
    job. Never inside a transaction of the work (the lines would be invisible until its
    commit, or lost with a rollback); they wait for the next chance outside it.
    """

    def __init__(self, job_id: int) -> None:
        super().__init__(level=logging.INFO)
        self.job_id = job_id
        self.thread_id = threading.get_ident()
        self.threads = {self.thread_id}  # the job's own, and helper threads it adopted
        self.buffer: list[JobLogLine] = []
        self.buffer_lock = threading.Lock()
        self.count = 0
        self.last_id: int | None = None  # newest line written, for the job.progress event
        self.last_write = time.monotonic()  # the start, announced by the RUNNING event
        self.setFormatter(logging.Formatter("%(message)s"))

    def adopt(self) -> None:
        """Take the calling thread's records as the job's (a helper thread of the job)."""
        self.threads.add(threading.get_ident())

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread not in self.threads or self.count > MAX_LOG_LINES:
            return
        try:
            message = self.format(record)
            tenant_message = _tenant_text(record)
            with self.buffer_lock:
                self.count += 1
                if self.count > MAX_LOG_LINES:
                    message = tenant_message = f"log truncated after {MAX_LOG_LINES} lines"
                self.buffer.append(
                    JobLogLine(
                        job_id=self.job_id,
                        at=datetime.fromtimestamp(record.created, tz=UTC),
                        level=record.levelname[:10],
                        logger=record.name[:100],
                        message=message[:MAX_LINE_CHARS],
                        tenant_message=tenant_message[:MAX_LINE_CHARS],
                    )
                )
            # Written by the job's own thread only (on its connection, between its steps).
            due = time.monotonic() - self.last_write >= PROGRESS_INTERVAL_S
            if due and record.thread == self.thread_id and not connection.in_atomic_block:
                self.write()
        except Exception:  # logging must never break the job
            self.handleError(record)

    def write(self) -> None:
        with self.buffer_lock:
            lines, self.buffer = self.buffer, []
        if lines:
            self.last_write = time.monotonic()
            if len(lines) == 1:
                # Most writes are one line. A plain INSERT commits on its own; bulk_create
                # would wrap it in BEGIN ... COMMIT: three round trips a line instead of one.
                lines[0].save(force_insert=True)
            else:
                JobLogLine.objects.bulk_create(lines)
            self.last_id = lines[-1].pk or self.last_id


_running = threading.local()  # the log handler of the job this thread runs, if any


def job_log_adopter() -> Callable[[], None]:
    """For work that hands steps to helper threads: a function each of them calls first,
    so that what it logs is the running job's log. A no-op outside a job."""
    handler: JobLogHandler | None = getattr(_running, "handler", None)
    return handler.adopt if handler is not None else lambda: None


@contextmanager
def capture_logs(job: Job) -> Iterator[JobLogHandler]:
    handler = JobLogHandler(job.pk)
    _running.handler = handler
    restore: list[tuple[logging.Logger, int]] = []
    for name in CAPTURED_LOGGERS:
        log = logging.getLogger(name)
        log.addHandler(handler)
        if log.getEffectiveLevel() > logging.INFO:
            # Let INFO through to our handler; other handlers keep their own levels.
            restore.append((log, log.level))
            log.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        _running.handler = None
        for name in CAPTURED_LOGGERS:
            logging.getLogger(name).removeHandler(handler)
        for log, level in restore:
            log.setLevel(level)
