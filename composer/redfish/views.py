"""The one view behind /redfish/v1: authentication, routing, queries, ETags, errors.

Every answer carries `OData-Version: 4.0`; a resource read carries its `ETag` (a weak
digest of the body) and honours `If-None-Match`; a PATCH or DELETE with `If-Match` is
answered 412 when the resource changed since that ETag. Everything but the service root,
`/redfish`, `/redfish/v1/odata`, `/redfish/v1/$metadata`, the schema of Composer's OEM
extension it references and the login itself needs a session token or HTTP Basic.
Refusals use the Redfish error shape with registry messages; nothing a client sends is
answered 500.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from composer.redfish import queries, routes, sessions
from composer.redfish.answers import Answer
from composer.redfish.caller import Call, Caller
from composer.redfish.oem import SCHEMA_PATH
from composer.redfish.paths import SESSIONS
from fabric.redfish_render import documents
from fabric.redfish_render.build import V1
from fabric.redfish_render.errors import RedfishError, refuse

logger = logging.getLogger(__name__)


ODATA_VERSION = "4.0"
OPEN_PATHS = frozenset({V1, f"{V1}/odata", f"{V1}/$metadata", SCHEMA_PATH})
BODY_METHODS = frozenset({"POST", "PATCH", "PUT"})
MAX_BODY = 1024 * 1024  # a Redfish request is a few kilobytes; anything near this is not one


@csrf_exempt
def version(request: HttpRequest) -> HttpResponseBase:
    """GET /redfish: the versions this service speaks."""
    return _finish(request, JsonResponse({"v1": f"{V1}/"}))


@csrf_exempt
def serve(request: HttpRequest, rest: str | None = None) -> HttpResponseBase:
    """Any request under /redfish/v1."""
    path = (V1 + (rest or "")).rstrip("/") or V1
    try:
        response = _answer(request, path)
    except RedfishError as refusal:
        response = _error(refusal)
    except Exception:  # a fault of ours: logged with its traceback, answered in Redfish
        logger.exception("Redfish %s %s failed", request.method, path)
        response = _error(refuse(500, "The service failed; see its log.", "Base.InternalError"))
    return _finish(request, response)


def _answer(request: HttpRequest, path: str) -> HttpResponseBase:
    method = request.method or "GET"
    _check_odata_version(request)
    remote_addr = request.META.get("REMOTE_ADDR") or None
    caller = sessions.caller_of(request, remote_addr)
    if method == "POST" and path.endswith(MEMBERS):
        path = _collection_of(path)
    login = method == "POST" and path == SESSIONS
    if caller is None and not login and not (method in ("GET", "HEAD") and path in OPEN_PATHS):
        raise refuse(
            401,
            "Sign in: send a session token (X-Auth-Token) or HTTP Basic credentials.",
            "Base.NoValidSession",
            headers={"WWW-Authenticate": 'Basic realm="Redfish"'},
        )
    found = routes.resolve(path)
    if found is None:
        raise refuse(404, f"There is no resource at {path}.", "Base.ResourceMissingAtURI", path)
    route, params = found
    query = {key: request.GET.get(key, "") for key in request.GET}
    call = Call(
        caller=caller or Caller.anonymous(remote_addr),
        path=path,
        params=params,
        query=query,
        request=request,
    )
    if method in ("GET", "HEAD"):
        return _read(route, call, request, head=method == "HEAD")
    writer = route.writer(method)
    if writer is None:
        raise refuse(
            405,
            f"{method} is not allowed on {path}; it allows {', '.join(route.allowed())}.",
            "Base.OperationNotAllowed",
            headers={"Allow": ", ".join(route.allowed())},
        )
    if method in BODY_METHODS:
        call.body = _body(request)
    if method in ("PATCH", "DELETE"):
        _check_if_match(route, call, request)
    return _written(writer(call), route)


MEMBERS = "/Members"


def _collection_of(path: str) -> str:
    """A POST to a collection's `Members` property is a POST to the collection (Redfish
    says they are the same request); any other path is itself."""
    collection = path[: -len(MEMBERS)]
    found = routes.resolve(collection)
    return collection if found is not None and found[0].post is not None else path


def _check_odata_version(request: HttpRequest) -> None:
    """A request that asks for an OData version other than 4.0 is refused with 412, as
    the Redfish specification asks (the header is optional)."""
    wanted = request.headers.get("OData-Version")
    if wanted is not None and wanted.strip() != ODATA_VERSION:
        raise refuse(
            412,
            f"This service speaks OData version {ODATA_VERSION}; the request asked for "
            f"OData-Version {wanted}.",
            "Base.HeaderInvalid",
            f"OData-Version: {wanted}",
        )


def _read(route: routes.Route, call: Call, request: HttpRequest, *, head: bool) -> HttpResponseBase:
    if route.get is None:
        allowed = ", ".join(route.allowed())
        raise refuse(
            405,
            f"{call.path} cannot be read; it allows {allowed}.",
            "Base.OperationNotAllowed",
            headers={"Allow": allowed},
        )
    queries.check(call.query)
    found = route.get(call)
    if isinstance(found, HttpResponseBase):  # a document, or an event stream
        return found
    if isinstance(found, Answer):  # a task monitor
        return _written(found, route)
    body = queries.apply(_lookup(call), found, call.query, call.path) if call.query else found
    # The ETag is the resource's own (not of its $expand or page), so that a client that
    # read it with a query can send it back in If-Match; a read with a query is never 304.
    tag = documents.etag(found)
    unchanged = _tags(request.headers.get("If-None-Match", "")) & {tag, "*"}
    fresh = unchanged and not call.query
    response = HttpResponse(status=304) if fresh else JsonResponse(body)
    response["ETag"] = tag
    response["Allow"] = ", ".join(route.allowed())
    link = documents.described_by(body)
    if link:
        response["Link"] = link
    if head:
        response.content = b""
    return response


def _lookup(call: Call) -> documents.Lookup:
    """How `$expand` and `only` find another resource: read as the same caller."""

    def find(path: str) -> dict[str, Any] | None:
        found = routes.resolve(path)
        if found is None or found[0].get is None:
            return None
        sub = Call(caller=call.caller, path=path, params=found[1], request=call.request)
        try:
            body = found[0].get(sub)
        except RedfishError:
            return None
        return body if isinstance(body, dict) else None

    return find


def _check_if_match(route: routes.Route, call: Call, request: HttpRequest) -> None:
    wanted = request.headers.get("If-Match", "")
    if not wanted or route.get is None:
        return
    current = route.get(Call(caller=call.caller, path=call.path, params=call.params))
    if not isinstance(current, dict):
        return
    tags = _tags(wanted)
    if "*" not in tags and documents.etag(current) not in tags:
        raise refuse(
            412,
            f"{call.path} changed since it was read: read it again and send its new ETag "
            "in If-Match.",
            "Base.PreconditionFailed",
        )


def _tags(header: str) -> set[str]:
    return {tag.strip() for tag in header.split(",") if tag.strip()}


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        raw = request.body
    except RequestDataTooBig as exc:  # past DATA_UPLOAD_MAX_MEMORY_SIZE: never read
        raise refuse(413, "The request body is too large for a Redfish request.") from exc
    if len(raw) > MAX_BODY:
        raise refuse(413, "The request body is too large for a Redfish request.")
    media = (request.content_type or "").lower()
    if raw.strip() and media not in ("application/json", ""):
        raise refuse(
            415,
            f"The request body must be JSON (Content-Type application/json), not {media}.",
        )
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise refuse(400, "The request body is not valid JSON.", "Base.MalformedJSON") from exc
    if not isinstance(body, dict):
        raise refuse(400, "The request body must be a JSON object.", "Base.MalformedJSON")
    return body


def _written(answer: Answer, route: routes.Route) -> HttpResponse:
    if answer.body is None:
        response = HttpResponse(status=answer.status)
    else:
        response = JsonResponse(answer.body, status=answer.status, safe=False)
        if answer.status in (200, 201) and isinstance(answer.body, dict):
            response["ETag"] = documents.etag(answer.body)
    for name, value in answer.headers.items():
        response[name] = value
    return response


def _error(refusal: RedfishError) -> HttpResponse:
    response = JsonResponse(refusal.body(), status=refusal.status)
    for name, value in refusal.headers.items():
        response[name] = value
    return response


def _finish(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    response["OData-Version"] = ODATA_VERSION
    response.setdefault("Cache-Control", "no-cache")
    if response.get("Content-Type", "").startswith("application/json"):
        response["Content-Type"] = "application/json;charset=utf-8"
    return response
