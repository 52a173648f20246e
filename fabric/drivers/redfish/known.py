"""The process's last discovery of each Redfish manager, reused for a while by the
drivers built after it.

Why: drivers are built per call, so a compose job's driver starts knowing nothing, and
walking the whole service before the first bind costs minutes on a fabric of thousands of
devices. Every discovery (discover, health, probe and sync all walk) is remembered here;
a bind or unbind by a later driver starts from it while it is younger than the manager's
`survey_max_age_s`. A stale one is safe: the binds re-read what they change, and the driver
walks again when a device or host is unknown to it or a resource it names answers 404.

Keyed like the sessions (fabric.drivers.redfish.sessions): by process id (a forked worker
walks for itself), endpoint, a digest of the credentials (never the credentials), the
connection options and `use_expand` (what was walked, and how). Bounded: past MAX_MANAGERS
the least recently used discovery goes.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.client import Options
from fabric.drivers.redfish.sessions import credential_digest
from fabric.drivers.redfish.state import State

MAX_MANAGERS = 16  # per process, as many as it keeps sessions for
DEFAULT_MAX_AGE_S = 300.0
_KNOWN: OrderedDict[tuple[Any, ...], tuple[float, State]] = OrderedDict()
_KNOWN_LOCK = threading.Lock()


def max_age_of(settings: Mapping[str, Any]) -> float:
    """The setting `survey_max_age_s` (default 300; 0 walks the service for every job)."""
    value = settings.get("survey_max_age_s", DEFAULT_MAX_AGE_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise DriverError(
            f"Setting survey_max_age_s must be a number of seconds, 0 or more; got {value!r}.",
            permanent=True,
        )
    return float(value)


def key_of(
    endpoint: str, credentials: Mapping[str, str], options: Options, use_expand: bool
) -> tuple[Any, ...]:
    """What a discovery is shared by: the same process, manager, credentials and options."""
    return (os.getpid(), endpoint.rstrip("/"), credential_digest(credentials), options, use_expand)


def remember(key: tuple[Any, ...], state: State) -> None:
    """Keep `state` as the manager's latest discovery (replacing an older one)."""
    with _KNOWN_LOCK:
        _KNOWN[key] = (time.monotonic(), state)
        _KNOWN.move_to_end(key)
        while len(_KNOWN) > MAX_MANAGERS:
            _KNOWN.popitem(last=False)


def recall(key: tuple[Any, ...], max_age_s: float) -> State | None:
    """The manager's latest discovery if it is at most `max_age_s` old, else None."""
    with _KNOWN_LOCK:
        entry = _KNOWN.get(key)
        if entry is None:
            return None
        taken, state = entry
        if time.monotonic() - taken > max_age_s:
            del _KNOWN[key]
            return None
        _KNOWN.move_to_end(key)
        return state
