"""/metrics, /healthz and /readyz: the endpoints a supervisor and Prometheus call.

- `/healthz` (liveness): the process answers; nothing else is asked, so a restart is never
  triggered by a database or Redis outage that a restart would not cure.
- `/readyz` (readiness): `composer.monitoring.readiness`; 200 when every check passes, else
  503, with a JSON body naming each check and what failed. `?only=database,redis` runs only
  those (a web process's own readiness behind a load balancer).
- `/metrics`: the Prometheus text format, for the networks and token of
  `composer.monitoring.access`. `?scope=process` gives this machine's processes' series
  only, `?scope=domain` the database's only (docs/monitoring.md says which to scrape where).
"""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

from composer.monitoring.access import metrics_refusal
from composer.monitoring.collector import DomainCollector
from composer.monitoring.metrics import multiprocess_dir
from composer.monitoring.readiness import CHECKS, readiness

__all__ = ["healthz", "metrics", "readyz"]

logger = logging.getLogger(__name__)

SCOPES = ("all", "process", "domain")


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: this process answers."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when every check passes, else 503 naming what failed."""
    only = None
    if request.GET.get("only"):
        only = {name.strip() for name in request.GET["only"].split(",") if name.strip()}
        unknown = sorted(only - set(CHECKS))
        if unknown:
            return JsonResponse(
                {
                    "only": f"Unknown check(s) {', '.join(unknown)}; "
                    f"choose among {', '.join(CHECKS)}."
                },
                status=400,
            )
    checks = readiness(only)
    failed = [c.name for c in checks if not c.ok]
    body: dict[str, Any] = {
        "status": "not ready" if failed else "ready",
        "failed": failed,
        "checks": {
            c.name: ({"ok": True} if c.ok else {"ok": False, "detail": c.detail}) for c in checks
        },
    }
    _log_change(failed)
    response = JsonResponse(body, status=503 if failed else 200)
    # An expected state, named in the body and logged once per change (below), not an
    # error of Django's request handling to log at every probe.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


_last_failed: list[str] | None = None


def _log_change(failed: list[str]) -> None:
    """Log when this process's readiness changes (not at every probe)."""
    global _last_failed
    if failed == _last_failed:
        return
    if failed:
        logger.warning("not ready: %s", ", ".join(failed))
    elif _last_failed is not None:
        logger.info("ready again")
    _last_failed = failed


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus exposition of this machine's processes and of the domain."""
    refusal = metrics_refusal(request)
    if refusal is not None:
        return refusal
    scope = request.GET.get("scope", "all")
    if scope not in SCOPES:
        return JsonResponse({"scope": f"Choose one of {', '.join(SCOPES)}."}, status=400)
    output = b""
    if scope in ("all", "process"):
        output += generate_latest(process_registry())
    if scope in ("all", "domain"):
        domain = CollectorRegistry(auto_describe=False)
        domain.register(DomainCollector())
        output += generate_latest(domain)
    # The classic text format (0.0.4), which every Prometheus since 2.0 reads.
    return HttpResponse(output, content_type=CONTENT_TYPE_PLAIN_0_0_4)


def process_registry() -> CollectorRegistry:
    """The processes' own series: every process of this machine added up (multiprocess
    mode), else this process's."""
    folder = multiprocess_dir()
    if not folder:
        return REGISTRY
    registry = CollectorRegistry(auto_describe=False)
    MultiProcessCollector(registry, path=folder)
    return registry
