"""OpenAPI post-processing: document the error responses every operation can give.

The error shape is the same everywhere (composer.api.errors), so rather than repeating it on
each view (and making fabric's views import composer), one hook adds it after generation:
a shared `Error` component and, per operation, the statuses it can answer:

- 400 when it takes a body or query parameters (bad input, bad filters, bad paging);
- 401 unless it accepts anonymous callers;
- 403 on unsafe methods (a session without a CSRF token, a read-only member writing);
- 404 when it has a path parameter (unknown or invisible id) or is a paginated list (a page
  past the end).

Responses a view documents itself are kept as they are.
"""

from __future__ import annotations

from typing import Any

ERROR_REF = {"$ref": "#/components/schemas/Error"}

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "Every API error. `code` is stable snake_case; `field` names the offending input "
        "(or is null); `errors` holds every message by field for validation errors."
    ),
    "properties": {
        "code": {"type": "string", "example": "invalid"},
        "detail": {
            "type": "string",
            "example": "Select a valid choice. banana is not one of the available choices.",
        },
        "field": {"type": "string", "nullable": True, "example": "kind"},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
            "example": {
                "kind": ["Select a valid choice. banana is not one of the available choices."]
            },
        },
    },
    "required": ["code", "detail", "field", "errors"],
}

DESCRIPTIONS = {
    "400": "Invalid input (code `invalid`); `field` names the parameter.",
    "401": "Not signed in, or a bad token (`not_authenticated`, `authentication_failed`).",
    "403": "Not allowed (`permission_denied`).",
    "404": "No such object, or not visible to the caller, or no such page (`not_found`).",
}

UNSAFE_METHODS = {"post", "put", "patch", "delete"}


def add_error_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry: add `Error` and the error responses."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for methods in result.get("paths", {}).values():
        for method, operation in methods.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            for code in _error_codes(method, operation):
                operation.setdefault("responses", {}).setdefault(
                    code,
                    {
                        "description": DESCRIPTIONS[code],
                        "content": {"application/json": {"schema": ERROR_REF}},
                    },
                )
    return result


def _error_codes(method: str, operation: dict[str, Any]) -> list[str]:
    parameters = operation.get("parameters", [])
    in_path = any(p.get("in") == "path" for p in parameters)
    in_query = any(p.get("in") == "query" for p in parameters)
    paginated = any(p.get("in") == "query" and p.get("name") == "page" for p in parameters)
    anonymous_ok = {} in operation.get("security", [{}]) or not operation.get("security", True)
    codes = []
    if in_query or "requestBody" in operation:
        codes.append("400")
    if not anonymous_ok:
        codes.append("401")
    if method in UNSAFE_METHODS:
        codes.append("403")
    if in_path or paginated:
        codes.append("404")
    return codes
