"""The API's one request parser: JSON, bounded in size, depth and text.

The API takes JSON bodies only. Form and multipart bodies answer 415: an HTML form cannot
say "false" (an unchecked box is simply absent, which DRF reads as false: a form body
without `on` took a device out of maintenance), cannot nest (a composition's `spec`), and
is not what the schema or any client of this API sends. DRF calls no parser for an empty
body, so the 415 is answered before the view, by the declared Content-Type alone
(composer.api.middleware); this parser sees only the bodies that get past it.

A body larger than DATA_UPLOAD_MAX_MEMORY_SIZE answers 413 before it is read (by its
Content-Length, and in any case before more than that is read). JSON nested more than a
few dozen levels deep, or holding a NUL or an unpaired surrogate in any string, answers
400 (composer.jsonlimits): never a RecursionError or a database error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import parsers, status
from rest_framework.exceptions import APIException, ParseError, ValidationError

from composer.jsonlimits import JSONRefused, loads


class RequestTooLarge(APIException):
    """A body over the limit (DATA_UPLOAD_MAX_MEMORY_SIZE): refused before it is parsed.

    `size` is the declared Content-Length when there was one.
    """

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"

    def __init__(self, *, size: int | None, limit: int) -> None:
        told = f"{size:,} bytes" if size is not None else "more than that"
        super().__init__(f"The body may be at most {limit:,} bytes; this one is {told}.")


class JSONParser(parsers.JSONParser):
    """`application/json`, strict, within the body limit and composer.jsonlimits' bounds."""

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        parser_context = parser_context or {}
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        request = parser_context.get("request")
        declared = _content_length(request.META if request is not None else {})
        if limit is not None and declared > limit:
            raise RequestTooLarge(size=declared, limit=limit)
        body = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(body) > limit:
            raise RequestTooLarge(size=None, limit=limit)
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            return loads(body.decode(encoding))
        except JSONRefused as exc:
            if exc.field is None:
                raise ParseError(exc.message) from None
            raise ValidationError({exc.field: [exc.message]}) from None
        except UnicodeDecodeError:
            raise ParseError(f"The body is not valid {encoding} text.") from None
        except LookupError:  # charset=<something Python does not know>
            raise ParseError(f"Unknown charset {encoding[:40]!r}; send UTF-8.") from None
        except json.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


def _content_length(meta: Any) -> int:
    try:
        return int(meta.get("CONTENT_LENGTH") or 0)
    except (TypeError, ValueError):
        return 0
