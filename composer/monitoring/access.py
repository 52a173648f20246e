"""Who may read /metrics: COMPOSER_METRICS_ALLOWED_NETWORKS and COMPOSER_METRICS_TOKEN.

Metrics are an operators' surface (pool, tenant and manager names, queue depths), so a
scrape must come from an allowed network (loopback only unless configured) and, when a
token is set, carry it as `Authorization: Bearer <token>` (Prometheus' `authorization`
scrape setting). Both must hold when both are set. Behind a reverse proxy the address is
the proxy's: then set a token.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, JsonResponse

logger = logging.getLogger(__name__)

__all__ = ["metrics_refusal", "networks_parse"]

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


def _address_allowed(request: HttpRequest) -> bool:
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    networks = _allowed(tuple(settings.COMPOSER_METRICS_ALLOWED_NETWORKS))
    return any(address in network for network in networks)


def metrics_refusal(request: HttpRequest) -> JsonResponse | None:
    """None when `request` may read the metrics; else the answer to give (403 for an
    address outside the allowed networks, 401 for a missing or wrong token)."""
    if not _address_allowed(request):
        return JsonResponse(
            {"detail": "Metrics are not served to this address (see the allowed networks)."},
            status=403,
        )
    token = settings.COMPOSER_METRICS_TOKEN
    if not token:
        return None
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return None
    response = JsonResponse(
        {"detail": "Send the metrics token as Authorization: Bearer <token>."}, status=401
    )
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response
