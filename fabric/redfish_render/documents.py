"""Answering Redfish reads: ETags, `$expand` (one level), the OData service document
and `$metadata`, for any tree of resources a service renders."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fabric.redfish_render.build import V1, VERSIONS, Resource


def protocol_features(*, top_skip: bool = False, only_member: bool = False) -> dict[str, Any]:
    """`ProtocolFeaturesSupported` for a service with `$expand` one level (what `expand`
    does), and `$top`/`$skip` and `only` where the service says it has them."""
    return {
        "ExpandQuery": {
            "ExpandAll": True,
            "Levels": True,
            "Links": True,
            "NoLinks": True,
            "MaxLevels": 1,
        },
        "FilterQuery": False,
        "SelectQuery": False,
        "OnlyMemberQuery": only_member,
        "ExcerptQuery": False,
        "TopSkipQuery": top_skip,
        "DeepOperations": {"DeepPATCH": False, "DeepPOST": False},
    }


# Where DMTF publishes the JSON schema of each type (the `Link: rel=describedby` target).
SCHEMAS = "https://redfish.dmtf.org/schemas/v1"


def described_by(body: Resource) -> str | None:
    """The `Link` header a read carries: the JSON schema of the resource's type
    (`#Chassis.v1_28_0.Chassis` is described by `Chassis.v1_28_0.json`), None for a
    document without `@odata.type` (the OData service document)."""
    parts = str(body.get("@odata.type") or "").lstrip("#").split(".")
    if len(parts) < 2:
        return None
    return f"<{SCHEMAS}/{'.'.join(parts[:-1])}.json>; rel=describedby"


def etag(body: Resource) -> str:
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:20]
    return f'W/"{digest}"'


# How `expand` finds a resource by its path (None where there is none).
Lookup = Callable[[str], Resource | None]
EXPAND = re.compile(r"^([.*~])(?:\(\$levels=(\d+)\))?$")


def expand(find: Lookup, found: Resource, query: str) -> Resource | None:
    """The resource `found` with `$expand=query` applied (one level): `.` its
    subordinate references (and a collection's members), `~` its Links, `*` both; the
    references are found with `find`. None when the query is not one this service
    supports."""
    match = EXPAND.match(query)
    if not match or int(match.group(2) or 1) > 1:
        return None
    body = copy.deepcopy(found)
    kind = match.group(1)

    def inline(value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"@odata.id"}:
            return copy.deepcopy(find(str(value["@odata.id"])) or value)
        if isinstance(value, list):
            return [inline(v) for v in value]
        return value

    for name, value in list(body.items()):
        if name == "Links" and kind in "*~" and isinstance(value, dict):
            body["Links"] = {k: inline(v) for k, v in value.items()}
        elif name not in ("Links", "@odata.id") and kind in ".*":
            body[name] = inline(value)
    return body


def odata(top: Mapping[str, str]) -> dict[str, Any]:
    """The OData service document: the service root and its top-level services by name."""
    return {
        "@odata.context": f"{V1}/$metadata",
        "value": [{"name": "Service", "kind": "Singleton", "url": f"{V1}/"}]
        + [{"name": name, "kind": "Singleton", "url": path} for name, path in top.items()],
    }


def metadata(
    bodies: Iterable[Resource], *, references: Mapping[str, Iterable[str]] | None = None
) -> str:
    """`$metadata`: a reference to DMTF's schema of every type `bodies` hold, and of
    every type the project renders (`VERSIONS`); and to each of the service's own
    (OEM) schemas `references` names: where it is served -> the namespaces it holds."""
    namespaces: dict[str, set[str]] = {}
    for body in bodies:
        parts = str(body.get("@odata.type") or "").lstrip("#").split(".")
        if len(parts) == 3:
            namespaces.setdefault(parts[0], set()).update({parts[0], f"{parts[0]}.{parts[1]}"})
        elif len(parts) == 2:
            namespaces.setdefault(parts[0], set()).add(parts[0])
    for name in VERSIONS:
        namespaces.setdefault(name, {name})
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">',
    ]
    for schema in sorted(namespaces):
        lines.append(f'  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/{schema}_v1.xml">')
        for namespace in sorted(namespaces[schema]):
            lines.append(f'    <edmx:Include Namespace="{namespace}"/>')
        lines.append("  </edmx:Reference>")
    for uri, included in sorted((references or {}).items()):
        lines.append(f'  <edmx:Reference Uri="{uri}">')
        lines += [f'    <edmx:Include Namespace="{namespace}"/>' for namespace in included]
        lines.append("  </edmx:Reference>")
    lines += [
        "  <edmx:DataServices>",
        '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">',
        '      <EntityContainer Name="Service" Extends="ServiceRoot.v1_20_0.ServiceContainer"/>',
        "    </Schema>",
        "  </edmx:DataServices>",
        "</edmx:Edmx>",
    ]
    return "\n".join(lines) + "\n"
