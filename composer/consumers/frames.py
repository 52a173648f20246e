"""What the events consumer accepts from a client: small JSON text frames.

Every client message is a small object (the largest, a `resume` with 1,000 seen ids, is
about 10 KB), so a message over MAX_MESSAGE_CHARS is refused and the connection closed
with 1009, "message too big" (RFC 6455), after an error message that says so. The server
in front (Daphne, uvicorn) refuses larger frames itself with the same close code, and text
that is not UTF-8 with 1007 (composer.asgi_server). Malformed JSON (nested too deep,
holding a NUL: composer.jsonlimits) gets an error message and the connection stays open.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from composer.jsonlimits import JSONRefused, loads

MAX_MESSAGE_CHARS = 64 * 1024
CLOSE_MESSAGE_TOO_BIG = 1009


@dataclass(frozen=True)
class Refusal:
    """Why a client message is not handled: the error message's field and text, and the
    close code when the connection ends with it."""

    field: str | None
    message: str
    close_code: int | None = None


def read_message(text_data: str | None) -> Any:
    """The parsed JSON of a text frame, or a Refusal (`text_data` None: a binary frame)."""
    if text_data is None:
        return Refusal(None, "Send JSON text frames, not binary ones.")
    if len(text_data) > MAX_MESSAGE_CHARS:
        return Refusal(
            None,
            f"A message may be at most {MAX_MESSAGE_CHARS:,} characters; this one has "
            f"{len(text_data):,}.",
            close_code=CLOSE_MESSAGE_TOO_BIG,
        )
    try:
        return loads(text_data)
    except JSONRefused as exc:
        return Refusal(exc.field, exc.message)
    except json.JSONDecodeError:
        return Refusal(None, "The message is not valid JSON.")
