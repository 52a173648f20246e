"""The Redfish resources Composer serves: each path pattern and what answers each method.

A resource family (service.py, and the modules beside it) declares its `ROUTES`; `table()`
gathers them. A pattern names its variable segments in braces ("/Systems/{system}"),
which reach the handler as `call.params`. A GET handler returns the resource as a dict;
a write returns an `Answer`; either raises `RedfishError` to refuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.http.response import HttpResponseBase

from composer.redfish.answers import Answer
from composer.redfish.caller import Call

# A read answers the resource; a task monitor an Answer; an event stream a response.
Reader = Callable[[Call], dict[str, Any] | Answer | HttpResponseBase]
Writer = Callable[[Call], Answer]
_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """One path pattern (under /redfish/v1) and its handlers."""

    pattern: str
    get: Reader | None = None
    post: Writer | None = None
    patch: Writer | None = None
    delete: Writer | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)

    def allowed(self) -> list[str]:
        """The methods this resource answers, for `Allow` and a 405."""
        methods = [m for m in ("GET", "POST", "PATCH", "DELETE") if getattr(self, m.lower())]
        return ["GET", "HEAD", *methods[1:]] if self.get else methods

    def writer(self, method: str) -> Writer | None:
        """The handler of a write method; None for any other method (405)."""
        return {"POST": self.post, "PATCH": self.patch, "DELETE": self.delete}.get(method)


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in _PARAM.split(pattern)]
    # Even parts are literal text, odd parts the names of variable segments.
    regex = "".join(f"(?P<{p}>[^/]+)" if i % 2 else p for i, p in enumerate(parts))
    return re.compile(f"^{regex}$")


@cache
def table() -> tuple[Route, ...]:
    """Every route, the literal ones first (so "/Systems/Capabilities" is not a system).
    Two families may declare one pattern (one reads systems, another composes them):
    their handlers are merged; two handlers of one method are a programming error."""
    from composer.redfish import (
        blocks,
        chassis,
        compose,
        events,
        fabrics,
        oem,
        parts,
        reservations,
        service,
        systems,
        tasks,
        zones,
    )

    merged: dict[str, Route] = {}
    families = [service, oem, blocks, parts, zones, systems, chassis, fabrics, events]
    families += [compose, reservations, tasks]
    for route in [r for family in families for r in family.ROUTES]:
        known = merged.get(route.pattern)
        if known is None:
            merged[route.pattern] = route
            continue
        handlers = {}
        for method in ("get", "post", "patch", "delete"):
            mine, theirs = getattr(known, method), getattr(route, method)
            if mine and theirs:
                raise ValueError(f"two {method.upper()} handlers for {route.pattern}")
            handlers[method] = mine or theirs
        merged[route.pattern] = Route(route.pattern, **handlers)
    return tuple(sorted(merged.values(), key=lambda r: "{" in r.pattern))


def resolve(path: str) -> tuple[Route, dict[str, str]] | None:
    """The route of `path` (relative to /redfish/v1, "" for the root) and its params."""
    for route in table():
        match = route.regex.match(path)
        if match:
            return route, match.groupdict()
    return None
