"""Celery's side of operability: heartbeats, the request id, log formats, dead processes.

Connected when `composer.celery` loads (every worker, beat, and every process that sends
tasks):

- a worker's main process starts a heartbeat once it consumes (`worker_ready`), naming
  its queues, and removes it when it stops; beat does the same (`beat_init`);
- a task sent while a request id is current carries it in a message header, and the
  worker makes it current for the task's run, so its log lines carry it;
- the log handlers Celery sets up get the console's formatters (JSON with
  COMPOSER_LOG_FORMAT=json; redacted either way);
- a pool process that exits is marked dead for prometheus-client's multiprocess mode, so
  its live gauges stop counting.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
from typing import Any

from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    beat_init,
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from composer.monitoring.requestid import (
    HEADER,
    RequestIdFilter,
    request_id,
    request_id_clean,
    request_id_set,
)

logger = logging.getLogger(__name__)

__all__ = ["request_id_carry"]

_heartbeats: list[Any] = []


def _start_heartbeat(role: str, name: str, queues: list[str]) -> None:
    from composer.monitoring.heartbeat import Heartbeat

    try:
        heartbeat = Heartbeat(role, name, queues=queues).start()
        _heartbeats.append(heartbeat)
        # Beat has no shutdown signal: its SIGTERM ends in SystemExit, which runs these.
        atexit.register(heartbeat.stop)
    except Exception:  # never stop a worker for its heartbeat: readiness will say it
        logger.warning("%s heartbeat not started", role, exc_info=True)


@worker_ready.connect
def _worker_ready(sender: Any = None, **kwargs: Any) -> None:
    queues: list[str] = []
    with contextlib.suppress(AttributeError):  # a consumer without queues: none named
        queues = [q.name for q in sender.task_consumer.queues]
    _start_heartbeat("worker", str(getattr(sender, "hostname", socket.gethostname())), queues)


@beat_init.connect
def _beat_init(sender: Any = None, **kwargs: Any) -> None:
    _start_heartbeat("beat", f"{socket.gethostname()} pid {os.getpid()}", [])


@worker_shutdown.connect
def _worker_shutdown(**kwargs: Any) -> None:
    while _heartbeats:
        _heartbeats.pop().stop()


@worker_process_shutdown.connect
def _process_shutdown(pid: int | None = None, **kwargs: Any) -> None:
    from composer.monitoring.metrics import multiprocess_dir

    folder = multiprocess_dir()
    if folder:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid(), folder)


@before_task_publish.connect
def request_id_carry(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """Put the current request id (if any) in the headers of a task being sent."""
    rid = request_id()
    if rid and headers is not None:
        headers.setdefault(HEADER, rid)


@task_prerun.connect
def _restore_request_id(task: Any = None, **kwargs: Any) -> None:
    request = getattr(task, "request", None)
    if request is None or getattr(request, "is_eager", False):
        return  # eager (tests): the caller's id is already current
    request_id_set(request_id_clean(getattr(request, HEADER, None)))


@task_postrun.connect
def _clear_request_id(task: Any = None, **kwargs: Any) -> None:
    request = getattr(task, "request", None)
    if request is not None and not getattr(request, "is_eager", False):
        request_id_set(None)


@after_setup_logger.connect
@after_setup_task_logger.connect
def _log_format(logger: logging.Logger | None = None, **kwargs: Any) -> None:
    """Give Celery's handlers the console's format: JSON lines, or Celery's own lines
    redacted; both with the request id."""
    from django.conf import settings

    from composer.monitoring.logs import JsonFormatter, RedactingFormatter

    if logger is None:
        return
    json_lines = getattr(settings, "COMPOSER_LOG_FORMAT", "plain") == "json"
    for handler in logger.handlers:
        if isinstance(handler.formatter, JsonFormatter | RedactingFormatter):
            continue
        if json_lines:
            handler.setFormatter(JsonFormatter())
        else:
            handler.setFormatter(RedactingFormatter(handler.formatter or logging.Formatter()))
        if not any(isinstance(f, RequestIdFilter) for f in handler.filters):
            handler.addFilter(RequestIdFilter())
