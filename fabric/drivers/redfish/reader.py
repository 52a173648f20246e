"""Reading a Redfish service's resources by the links it gives, each read once per walk.

Nothing here builds a path: every URI read is an `@odata.id` the service itself returned
(the service root's links, a collection's Members, a resource's navigation properties).
Collections are read with `$expand=.($levels=1)` (or `*`) when the service root advertises
`ProtocolFeaturesSupported.ExpandQuery` (one request instead of one per member), unless the
manager's setting `use_expand` is false: a service whose `$expand` answers wrongly (members
missing, or an error) is then read one member at a time, slower but right.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.client import Session

logger = logging.getLogger(__name__)

Resource = dict[str, Any]


def refs(value: Any) -> list[str]:
    """The `@odata.id`s of a navigation property: one link, a list of them, or nothing."""
    if isinstance(value, Mapping):
        ref = value.get("@odata.id")
        return [str(ref)] if ref else []
    if isinstance(value, list):
        return [ref for item in value for ref in refs(item)]
    return []


def ref(value: Any) -> str | None:
    """The first `@odata.id` of a navigation property, or None."""
    found = refs(value)
    return found[0] if found else None


def link(resource: Mapping[str, Any], name: str) -> list[str]:
    """`Links.<name>` of a resource, as ids."""
    return refs((resource.get("Links") or {}).get(name))


def expand_query(root: Mapping[str, Any]) -> str:
    """The `$expand` value to read a collection with its members, or "" where the service
    root does not advertise one: `.` (subordinate resources only) where `NoLinks` is
    supported, else `*` where `ExpandAll` is; one level either way."""
    features = root.get("ProtocolFeaturesSupported") or {}
    expand = features.get("ExpandQuery") or {}
    if not isinstance(expand, Mapping) or not expand.get("Levels"):
        return ""
    if expand.get("NoLinks"):
        return ".($levels=1)"
    return "*($levels=1)" if expand.get("ExpandAll") else ""


def use_expand_of(settings: Mapping[str, Any]) -> bool:
    """The setting `use_expand` (default true): false never sends `$expand`."""
    value = settings.get("use_expand", True)
    if not isinstance(value, bool):
        raise DriverError(
            f"Setting use_expand must be true or false; got {value!r}.", permanent=True
        )
    return value


class Reader:
    """Reads resources through one session; a walk's cache of what it read.

    `requests` counts the HTTP requests made (the discovery benchmark reports it).
    """

    def __init__(self, session: Session, *, expand: str) -> None:
        self.session = session
        self.expand = expand
        self.cache: dict[str, Resource] = {}
        self.requests = 0
        self.missing: list[str] = []

    def get(self, path: str) -> Resource | None:
        """The resource at `path`, or None when the service says it is gone (404): a link
        to nothing is noted, not fatal, so that one broken link does not hide the rest."""
        key = path.rstrip("/") or path
        if key in self.cache:
            return self.cache[key]
        self.requests += 1
        reply = self.session.request("GET", path)
        if reply.status == 404:
            self.missing.append(path)
            logger.info("redfish %s: %s is linked but absent", self.session.endpoint, path)
            return None
        self.session.check(reply, f"read {path}")
        self._keep(reply.body)
        self.cache[key] = reply.body
        return reply.body

    def _keep(self, resource: Mapping[str, Any]) -> None:
        """Remember expanded members under their own ids."""
        for member in resource.get("Members") or []:
            if isinstance(member, dict) and len(member) > 1 and member.get("@odata.id"):
                self.cache.setdefault(str(member["@odata.id"]).rstrip("/"), member)

    def members(self, collection: str | None) -> list[Resource]:
        """The member resources of a collection (expanded in one request when possible)."""
        if not collection:
            return []
        key = collection.rstrip("/")
        if key not in self.cache and self.expand:
            self.requests += 1
            reply = self.session.request("GET", collection, args={"$expand": self.expand})
            if reply.status == 404:
                self.missing.append(collection)
                return []
            self.session.check(reply, f"read {collection}")
            self._keep(reply.body)
            self.cache[key] = reply.body
        body = self.get(collection)
        if body is None:
            return []
        return self.many(refs(body.get("Members")))

    def many(self, paths: Iterable[str]) -> list[Resource]:
        """Each resource of `paths` that exists, in order, each once."""
        found: list[Resource] = []
        seen: set[str] = set()
        seen_ids: set[str] = set()
        for path in paths:
            if path in seen:
                continue
            seen.add(path)
            resource = self.get(path)
            own = str((resource or {}).get("@odata.id") or path).rstrip("/")
            if resource is not None and own not in seen_ids:
                seen_ids.add(own)  # a service may list one resource under two links
                found.append(resource)
        return found

    def property_members(self, resource: Mapping[str, Any], name: str) -> list[Resource]:
        """A navigation property that is either a collection link or a list of links."""
        value = resource.get(name)
        if isinstance(value, list):
            return self.many(refs(value))
        return self.members(ref(value))
