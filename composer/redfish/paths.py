"""Where Composer's Redfish resources live."""

from __future__ import annotations

from fabric.redfish_render.build import V1

SESSION_SERVICE = f"{V1}/SessionService"
SESSIONS = f"{SESSION_SERVICE}/Sessions"
ACCOUNT_SERVICE = f"{V1}/AccountService"
ACCOUNTS = f"{ACCOUNT_SERVICE}/Accounts"
ROLES = f"{ACCOUNT_SERVICE}/Roles"
REGISTRIES = f"{V1}/Registries"
SYSTEMS = f"{V1}/Systems"
CHASSIS = f"{V1}/Chassis"
FABRICS = f"{V1}/Fabrics"
COMPOSITION = f"{V1}/CompositionService"
RESOURCE_BLOCKS = f"{COMPOSITION}/ResourceBlocks"
RESOURCE_ZONES = f"{COMPOSITION}/ResourceZones"
RESERVATIONS = f"{COMPOSITION}/CompositionReservations"
COMPOSE_ACTION = f"{COMPOSITION}/Actions/CompositionService.Compose"
TASK_SERVICE = f"{V1}/TaskService"
TASKS = f"{TASK_SERVICE}/Tasks"
MONITOR = "Monitor"  # a task's monitor: f"{TASKS}/{id}/{MONITOR}"
EVENT_SERVICE = f"{V1}/EventService"
EVENT_STREAM = f"{EVENT_SERVICE}/SSE"
SUBSCRIPTIONS = f"{EVENT_SERVICE}/Subscriptions"
# The top-level services the root links to, by the root's property names.
TOP = {
    "Systems": SYSTEMS,
    "Chassis": CHASSIS,
    "Fabrics": FABRICS,
    "CompositionService": COMPOSITION,
    "SessionService": SESSION_SERVICE,
    "AccountService": ACCOUNT_SERVICE,
    "Tasks": TASK_SERVICE,
    "EventService": EVENT_SERVICE,
    "Registries": REGISTRIES,
}


def row_id(text: str) -> int | None:
    """An id in a path (or a header) as a row's primary key; None for anything no row can
    have: not ASCII digits ("²" is a digit to Python, not to int()), or past a 64-bit key,
    which the database would refuse with an error."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def system(composition_id: int) -> str:
    """A composition as a composed ComputerSystem (its id is the composition's)."""
    return f"{SYSTEMS}/{composition_id}"


def task(job_id: int) -> str:
    """A Composer job as a Task (its id is the job's)."""
    return f"{TASKS}/{job_id}"


def block_id(kind: str, pk: int) -> str:
    """A block's id: a device's kind or "host", and the row's id: "gpu-12", "host-3"."""
    return f"{kind}-{pk}"


def resource_block(kind: str, pk: int) -> str:
    """A device (`kind` its kind: "gpu", "cxl_memory"...) or a host ("host", a compute
    block) as a ResourceBlock."""
    return f"{RESOURCE_BLOCKS}/{block_id(kind, pk)}"


__all__ = ["V1"]
