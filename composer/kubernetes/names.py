"""The names Composer and a cluster agree on: the DRA driver, the labels and annotations
that map nodes to hosts and namespaces to tenants, the binding conditions, and how pools
and devices are named in ResourceSlices (DNS labels, as the API requires)."""

from __future__ import annotations

import re

__all__ = [
    "CONDITION_FAILED",
    "CONDITION_READY",
    "CONDITION_RESCHEDULE",
    "DRIVER",
    "FABRIC_LABEL",
    "HOST_ANNOTATION",
    "MANAGED_BY",
    "TENANT_LABEL",
    "device_name",
    "device_pk",
    "dns_label",
]

# The DRA driver name in every slice and claim result Composer answers for.
DRIVER = "fabric.composer.dev"
# A node label naming the fabric (fabric manager) its host is attached to: each pool's
# node selector matches it, so the scheduler offers a pool only on nodes that can reach it.
FABRIC_LABEL = "composer.dev/fabric"
# A node annotation (or label) naming its Composer host; without it, the node's own name.
HOST_ANNOTATION = "composer.dev/host"
# A namespace label naming the tenant (slug) whose compositions its claims become.
TENANT_LABEL = "composer.dev/tenant"
MANAGED_BY = "composer"

CONDITION_READY = "FabricDeviceReady"
CONDITION_RESCHEDULE = "FabricDeviceReschedule"
CONDITION_FAILED = "FabricDeviceFailed"

_NOT_DNS = re.compile(r"[^a-z0-9-]+")


def dns_label(text: str, limit: int = 63) -> str:
    """`text` as a DNS label: lower case, runs of anything else as one '-', trimmed."""
    label = _NOT_DNS.sub("-", text.lower()).strip("-")[:limit].strip("-")
    return label or "x"


def device_name(kind: str, pk: int) -> str:
    """A device's name in its pool: its kind and database id, stable for its life."""
    return f"{dns_label(kind, 40)}-{pk}"


def device_pk(name: str) -> int | None:
    """The database id in a device name of `device_name`, or None (not one of ours)."""
    _, _, tail = name.rpartition("-")
    return int(tail) if tail.isdigit() else None
