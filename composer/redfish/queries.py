"""The query parameters Composer's Redfish service supports, checked and applied.

Supported (and said so in the service root's `ProtocolFeaturesSupported`): `$expand`
one level (`.`, `*`, `~`, with `$levels=1`), `$top` and `$skip` on collections (with
`Members@odata.nextLink` when more follow) and `only` (a collection of one member answers
with that member). Any other parameter that starts with `$` is answered 501, as the
Redfish specification asks; parameters without `$` are ignored.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fabric.redfish_render import documents
from fabric.redfish_render.errors import RedfishError, refuse

PROTOCOL_FEATURES = documents.protocol_features(top_skip=True, only_member=True)
SUPPORTED = ("$expand", "$top", "$skip", "only")
MAX_TOP = 10_000


def check(query: dict[str, str]) -> None:
    """Refuse what this service does not do, and values of the wrong type, before any
    work: 501 for an unknown `$` parameter, 400 for a bad value."""
    for name in query:
        if name.startswith("$") and name not in SUPPORTED:
            raise refuse(
                501,
                f"The query parameter {name} is not supported; this service supports "
                f"{', '.join(SUPPORTED)}.",
                "Base.QueryParameterUnsupported",
                name,
            )
    for name in ("$top", "$skip"):
        if name in query:
            value = query[name]
            if not (value.isascii() and value.isdigit()):
                raise refuse(
                    400,
                    f"{name} takes a whole number of members (got {value!r}).",
                    "Base.QueryParameterValueTypeError",
                    value,
                    name,
                )
            if int(value) > MAX_TOP:
                raise refuse(
                    400,
                    f"{name} is at most {MAX_TOP} (got {value}).",
                    "Base.QueryParameterOutOfRange",
                    value,
                    name,
                    f"0-{MAX_TOP}",
                )
    if query.get("only"):
        raise refuse(
            400,
            f"only takes no value (got {query['only']!r}): ask for ?only.",
            "Base.QueryParameterValueFormatError",
            query["only"],
            "only",
        )
    if "$expand" in query and documents.EXPAND.match(query["$expand"]) is None:
        raise _bad_expand(query["$expand"])


def _bad_expand(value: str) -> RedfishError:
    return refuse(
        400,
        f"$expand takes ., * or ~, optionally with ($levels=1) (got {value!r}).",
        "Base.QueryParameterValueFormatError",
        value,
        "$expand",
    )


def apply(
    find: documents.Lookup, body: dict[str, Any], query: dict[str, str], path: str
) -> dict[str, Any]:
    """`body` (found at `path`) with the query applied."""
    members = body.get("Members")
    if "only" in query:
        if not isinstance(members, list):
            raise refuse(
                400,
                "only applies to a collection.",
                "Base.QueryNotSupportedOnResource",
            )
        if len(members) == 1:
            single = find(str(members[0]["@odata.id"]))
            if single is not None:
                return single
    if isinstance(members, list) and ("$top" in query or "$skip" in query):
        skip = int(query.get("$skip") or 0)
        top = int(query.get("$top") or len(members))
        body = {**body, "Members": members[skip : skip + top]}
        if skip + top < len(members):
            following = {k: v for k, v in query.items() if k != "$skip"}
            following["$skip"] = str(skip + top)
            body["Members@odata.nextLink"] = f"{path}?{urlencode(following, safe='$')}"
    if "$expand" in query:
        expanded = documents.expand(find, body, query["$expand"])
        if expanded is None:
            raise _bad_expand(query["$expand"])
        body = expanded
    return body
