"""`manage.py metrics_serve`: this machine's processes' series, for a machine without a web
process (workers only).

Every Composer process of a machine counts its series into the machine's
PROMETHEUS_MULTIPROC_DIR; a web process's /metrics serves their sum. A machine that runs
only workers (and beat) has no web process, so this command serves the same sum, the
`?scope=process` part of /metrics, on a port of its own, to the same networks and token
(COMPOSER_METRICS_ALLOWED_NETWORKS, COMPOSER_METRICS_TOKEN). The domain's series come from
the web processes' /metrics (docs/monitoring.md).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from django.core.management.base import BaseCommand, CommandError, CommandParser
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from composer.monitoring.access import is_proxied, metrics_access
from composer.monitoring.metrics import multiprocess_dir
from composer.monitoring.views import process_registry

logger = logging.getLogger(__name__)

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def metrics_app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """A WSGI application answering GET /metrics with the machine's processes' series."""
    if environ.get("PATH_INFO") != "/metrics" or environ.get("REQUEST_METHOD") not in (
        "GET",
        "HEAD",
    ):
        return _json(start_response, "404 Not Found", "Only GET /metrics is served here.")
    refusal = metrics_access(
        str(environ.get("REMOTE_ADDR", "")),
        str(environ.get("HTTP_AUTHORIZATION", "")),
        proxied=is_proxied(environ),
    )
    if refusal is not None:
        status = "401 Unauthorized" if refusal.status == 401 else "403 Forbidden"
        extra = [("WWW-Authenticate", 'Bearer realm="metrics"')] if refusal.status == 401 else []
        return _json(start_response, status, refusal.detail, extra)
    body = generate_latest(process_registry())
    start_response("200 OK", [("Content-Type", CONTENT_TYPE_PLAIN_0_0_4)])
    return [body]


def _json(
    start_response: StartResponse,
    status: str,
    detail: str,
    headers: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    start_response(status, [("Content-Type", "application/json"), *(headers or [])])
    return [json.dumps({"detail": detail}).encode()]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # a scrape every few seconds
        logger.debug(format, *args)


class Command(BaseCommand):
    help = (
        "Serve this machine's processes' Prometheus series (PROMETHEUS_MULTIPROC_DIR) at "
        "/metrics on a port of its own, for machines that run workers and no web process."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
        parser.add_argument("--port", type=int, default=9808, help="port to listen on")

    def handle(self, *args: Any, **options: Any) -> None:
        if not multiprocess_dir():
            raise CommandError(
                "PROMETHEUS_MULTIPROC_DIR is not set: set it (the same folder for every "
                "Composer process of this machine) so that there is something to serve"
            )
        server = make_server(
            options["bind"], options["port"], metrics_app, handler_class=_QuietHandler
        )
        logger.info(
            "serving this machine's series at http://%s:%s/metrics", *server.server_address[:2]
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
