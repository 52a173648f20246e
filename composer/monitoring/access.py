"""Who may read /metrics: COMPOSER_METRICS_ALLOWED_NETWORKS and COMPOSER_METRICS_TOKEN.

Metrics are an operators' surface (pool, tenant and manager names, queue depths), so a
scrape must come from an allowed network (loopback only unless configured) and, when a
token is set, carry it as `Authorization: Bearer <token>` (Prometheus' `authorization`
scrape setting). Both must hold when both are set. Behind a reverse proxy the address is
the proxy's (loopback, for a proxy on the same host): without a token, a scrape that
carries a proxy's forwarding header (Forwarded, X-Forwarded-For, X-Real-IP) is refused,
so that the loopback default never opens /metrics to whoever the proxy serves.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse

logger = logging.getLogger(__name__)

__all__ = [
    "PROXY_HEADERS",
    "Refusal",
    "is_proxied",
    "metrics_access",
    "metrics_refusal",
    "networks_parse",
]

# The headers a reverse proxy adds (as WSGI/ASGI environ keys): their presence means the
# peer address is the proxy's, not the scraper's.
PROXY_HEADERS = ("HTTP_FORWARDED", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks_parse(values: tuple[str, ...]) -> tuple[Network, ...]:
    """The networks named by `values` ("10.0.0.0/8", "::1"; "*" for any address).
    Raises ValueError naming the first value that is not one."""
    networks: list[Network] = []
    for value in values:
        if value == "*":
            networks += [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
            continue
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError as exc:
            raise ValueError(
                f"COMPOSER_METRICS_ALLOWED_NETWORKS: {value!r} is not an address or network"
            ) from exc
    return tuple(networks)


@lru_cache(maxsize=4)
def _allowed(values: tuple[str, ...]) -> tuple[Network, ...]:
    try:
        return networks_parse(values)
    except ValueError as exc:
        logger.error("%s; /metrics refuses every scrape until it is fixed", exc)
        return ()


def _address_allowed(remote_addr: str) -> bool:
    try:
        address = ipaddress.ip_address(remote_addr)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    networks = _allowed(tuple(settings.COMPOSER_METRICS_ALLOWED_NETWORKS))
    return any(address in network for network in networks)


@dataclass(frozen=True)
class Refusal:
    """Why a scrape is refused: the HTTP status and the words of the answer."""

    status: int
    detail: str


def metrics_access(
    remote_addr: str, authorization: str, *, proxied: bool = False
) -> Refusal | None:
    """None when a scrape from `remote_addr` with this `Authorization` header may read the
    metrics; else why not (403: an address outside the allowed networks, or a scrape
    through a reverse proxy (`proxied`) while no token is set; 401: a missing or wrong
    token). Shared by /metrics and `manage.py metrics_serve`."""
    if not _address_allowed(remote_addr):
        return Refusal(403, "Metrics are not served to this address (see the allowed networks).")
    token = settings.COMPOSER_METRICS_TOKEN
    if not token:
        if proxied:
            return Refusal(
                403,
                "Metrics are not served through a reverse proxy without a token: "
                "set COMPOSER_METRICS_TOKEN.",
            )
        return None
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return None
    return Refusal(401, "Send the metrics token as Authorization: Bearer <token>.")


def is_proxied(environ: Mapping[str, Any]) -> bool:
    """Whether a request (its META, or a WSGI environ) came through a reverse proxy."""
    return any(environ.get(header) for header in PROXY_HEADERS)


def metrics_refusal(request: HttpRequest) -> JsonResponse | None:
    """`metrics_access` for a Django request: None, or the JSON answer to give."""
    refusal = metrics_access(
        request.META.get("REMOTE_ADDR", ""),
        request.headers.get("Authorization", ""),
        proxied=is_proxied(request.META),
    )
    if refusal is None:
        return None
    response = JsonResponse({"detail": refusal.detail}, status=refusal.status)
    if refusal.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response
