"""One JSON shape for every API error, so clients branch on a stable `code`, never on prose.

Every error the API returns looks like::

    {"code": "invalid", "detail": "Select a valid choice. banana is not one of the available
     choices.", "field": "kind", "errors": {"kind": ["Select a valid choice. ..."]}}

- `code`: stable snake_case, documented in the schema (`invalid`, `not_found`,
  `not_authenticated`, `authentication_failed`, `permission_denied`, `method_not_allowed`,
  `throttled`, `parse_error`, `unsupported_media_type`, `not_acceptable`,
  `request_too_large`, `invalid_credentials`, `database_unavailable` (503 with
  Retry-After: composer.views.errors), and each `composer.errors.ComposerError`
  subclass's own code);
- `detail`: one human-readable sentence (the first message when there are several);
- `field`: the offending input field (query parameter or body field), or null;
- `errors`: every message by field (`non_field_errors` for the rest); `{}` when the error is
  not about input.

Exceptions this handler does not know (programming errors) are left to Django, which logs
them and answers 500: hiding them behind a friendly JSON body would hide the bug.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import set_rollback

from composer.errors import BookingRefused, ComposerError

# Validation errors of any kind (body, query parameters, filters) share one code; the per-field
# messages say what is wrong.
INVALID = "invalid"


class InvalidCredentials(exceptions.APIException):
    """A token was asked for with a wrong username or password (or for an inactive user).

    400 rather than 401: the request itself (its body) is what is wrong, and the caller is
    not yet trying to authenticate with anything.
    """

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "Unable to log in with the given username and password."
    default_code = "invalid_credentials"


class FieldNotFound(exceptions.NotFound):
    """A 404 caused by one input field (e.g. `?page=999`), so the error can name it."""

    def __init__(self, detail: str, *, field: str) -> None:
        super().__init__(detail, code="not_found")
        self.field = field


class ErrorSerializer(serializers.Serializer):
    """The error body, for the schema (see the module docstring)."""

    code = serializers.CharField(help_text="Stable snake_case error code.")
    detail = serializers.CharField(help_text="Human-readable message.")
    field = serializers.CharField(allow_null=True, help_text="The offending input field, or null.")
    # The stubs see Serializer.errors overridden; DRF's metaclass takes declared fields off the
    # class, so the property stays.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Every message by field; empty when the error is not about input.",
    )


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: turn known exceptions into the one error shape.

    Returns None for anything else, so DRF re-raises it and Django answers 500 (and logs).
    """
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or exceptions.NotFound.default_detail)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or exceptions.PermissionDenied.default_detail)

    if isinstance(exc, ComposerError):
        body = error_body(
            code=exc.code,
            detail=exc.message,
            field=exc.field,
            errors={exc.field: [exc.message]} if exc.field else {},
        )
        if isinstance(exc, BookingRefused):  # the nearest window that fits, or null
            body["nearest"] = exc.nearest
        set_rollback()
        return Response(body, status=exc.status_code)

    if isinstance(exc, DjangoValidationError):
        detail: Any = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        set_rollback()
        return Response(validation_body(detail), status=status.HTTP_400_BAD_REQUEST)

    if not isinstance(exc, exceptions.APIException):
        return None

    headers: dict[str, str] = {}
    status_code = exc.status_code
    if isinstance(exc, exceptions.ValidationError):
        body = validation_body(exc.detail)
    else:
        body = _api_exception_body(exc)
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        # DRF downgrades these to 403 when the first authenticator (session) has no
        # WWW-Authenticate challenge; API clients need the 401 to know a token is missing.
        status_code = status.HTTP_401_UNAUTHORIZED
        headers["WWW-Authenticate"] = getattr(exc, "auth_header", None) or "Token"
    if getattr(exc, "wait", None):  # Throttled (and any exception like it) carries `wait`
        headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]
    set_rollback()
    return Response(body, status=status_code, headers=headers)


def error_body(
    *, code: str, detail: str, field: str | None = None, errors: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """The error shape; also used by views that answer an error without raising."""
    return {"code": code, "detail": detail, "field": field, "errors": errors or {}}


def validation_body(detail: Any) -> dict[str, Any]:
    """Error body of a validation error: code `invalid`, the first offending field named."""
    errors = flatten_errors(detail)
    field = next((name for name in errors if name != _non_field_key()), None)
    messages = errors.get(field) if field else next(iter(errors.values()), None)
    return error_body(
        code=INVALID,
        detail=messages[0] if messages else "Invalid input.",
        field=field,
        errors=errors,
    )


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Flatten nested error details into {"field": [...], "items.0.name": [...]}.

    Django's `__all__` and DRF's non-field key both come out as `non_field_errors`.
    """
    non_field = _non_field_key()
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = non_field if key in (NON_FIELD_ERRORS, non_field) and not prefix else str(key)
            for sub, messages in flatten_errors(
                value, f"{prefix}.{name}" if prefix else name
            ).items():
                out.setdefault(sub, []).extend(messages)
        return out
    if isinstance(detail, (list, tuple)):
        for index, item in enumerate(detail):
            if isinstance(item, dict):
                path = f"{prefix}.{index}" if prefix else str(index)
                for sub, messages in flatten_errors(item, path).items():
                    out.setdefault(sub, []).extend(messages)
            elif isinstance(item, (list, tuple)):
                for sub, messages in flatten_errors(item, prefix).items():
                    out.setdefault(sub, []).extend(messages)
            else:
                out.setdefault(prefix or non_field, []).append(str(item))
        return out
    return {prefix or non_field: [str(detail)]}


def _api_exception_body(exc: exceptions.APIException) -> dict[str, Any]:
    detail = exc.detail
    if isinstance(detail, (dict, list)):
        # e.g. PermissionDenied({"tenant": "..."}): keep every message, name the field.
        errors = flatten_errors(detail)
        field = next((name for name in errors if name != _non_field_key()), None)
        first = next(iter(errors.values()), [str(exc.default_detail)])
        return error_body(code=str(exc.default_code), detail=first[0], field=field, errors=errors)
    code = getattr(detail, "code", None) or exc.default_code
    return error_body(
        code=str(code), detail=str(detail), field=getattr(exc, "field", None), errors={}
    )


def _non_field_key() -> str:
    return str(api_settings.NON_FIELD_ERRORS_KEY)


class CompositionBusy(ComposerError):
    """A decompose asked while the composition is still being placed or bound (409)."""

    code = "composition_busy"
    status_code = 409
