"""The Redfish error shape: `error.code` and `error.message`, and every reason as a
registry message in `@Message.ExtendedInfo`.

`error.message` is the service's own sentence for a person (which field, what was wrong,
what to do); the registry messages are for programs that match on `MessageId`.
"""

from __future__ import annotations

from typing import Any

from fabric.redfish_render.messages import message


class RedfishError(Exception):
    """A refusal: the HTTP status, a sentence in the operator's words, and the registry
    messages (`messages.message(...)` bodies) that say it to a program."""

    def __init__(
        self,
        status: int,
        text: str,
        *messages: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.messages = list(messages) or [message("Base.GeneralError", resolution=text)]
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.text, self.messages)


def error_body(text: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The error answer: the first message's id as the code, `text` as the message."""
    return {
        "error": {
            "code": messages[0]["MessageId"],
            "message": text,
            "@Message.ExtendedInfo": messages,
        }
    }


def refuse(
    status: int,
    text: str,
    name: str = "Base.GeneralError",
    *args: object,
    properties: tuple[str, ...] = (),
    headers: dict[str, str] | None = None,
) -> RedfishError:
    """A RedfishError with one registry message `name` and its arguments. A
    GeneralError carries `text` as its Resolution, where DMTF's message points to."""
    general = name == "Base.GeneralError"
    info = message(name, *args, properties=properties, resolution=text if general else None)
    return RedfishError(status, text, info, headers=headers)
