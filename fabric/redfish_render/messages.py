"""Redfish messages: the registries this project sends messages from, and one message
filled in as a client reads it in `@Message.ExtendedInfo` or an event.

The registries are local files (`registries/`): the messages of DMTF's published
registries that the project sends, as DMTF wrote them, so a client that looks a
`MessageId` up finds the same text, severity and arguments. A message named here that
is not in a file is a programming error, caught by the tests.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

REGISTRY_DIR = Path(__file__).resolve().parent / "registries"
# Where DMTF publishes each whole registry (the files here hold the messages sent).
PUBLICATION = "https://redfish.dmtf.org/registries"


@cache
def registries() -> dict[str, dict[str, Any]]:
    """Every registry file by its prefix ("Base", "Composition", "ResourceEvent")."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(REGISTRY_DIR.glob("*.json")):
        registry = json.loads(path.read_text(encoding="utf-8"))
        found[str(registry["RegistryPrefix"])] = registry
    return found


def message_id(name: str) -> str:
    """`Base.PropertyUnknown` as a MessageId: `Base.1.22.1.PropertyUnknown`."""
    prefix, key = name.split(".", 1)
    registry = registries()[prefix]
    if key not in registry["Messages"]:
        raise KeyError(f"{key} is not in the {prefix} registry file")
    return f"{prefix}.{registry['RegistryVersion']}.{key}"


def message(
    name: str,
    *args: object,
    properties: tuple[str, ...] = (),
    resolution: str | None = None,
) -> dict[str, Any]:
    """The message `name` ("Base.PropertyValueNotInList") with its `%1`... arguments
    filled in, as a `Message` object; `properties` are JSON pointers into the request
    ("#/Links/ResourceBlocks/0") that the message is about; `resolution` replaces the
    registry's (a GeneralError says what went wrong there)."""
    prefix, key = name.split(".", 1)
    entry = registries()[prefix]["Messages"][key]
    text = str(entry["Message"])
    for number in range(len(args), 0, -1):  # %10 before %1
        text = text.replace(f"%{number}", str(args[number - 1]))
    body: dict[str, Any] = {
        "@odata.type": "#Message.v1_2_1.Message",
        "MessageId": message_id(name),
        "Message": text,
        "MessageArgs": [str(arg) for arg in args],
        "MessageSeverity": entry.get("MessageSeverity") or entry.get("Severity") or "OK",
        "Resolution": resolution or str(entry.get("Resolution") or "None."),
    }
    if properties:
        body["RelatedProperties"] = list(properties)
    return body


def event_record(
    name: str,
    *args: object,
    origin: str,
    at: str,
    member_id: str = "0",
) -> dict[str, Any]:
    """One record of an Event (its `Events` array): the registry message `name` with its
    arguments, about the resource at `origin`, that happened `at` (ISO 8601).

    `EventType` is deprecated but still required by the schema: `Other` says the record is
    to be read by its `MessageId` (the registry), as every event this project sends is.
    """
    filled = message(name, *args)
    record: dict[str, Any] = {
        "MemberId": member_id,
        "EventType": "Other",
        "EventTimestamp": at,
        "MessageId": filled["MessageId"],
        "Message": filled["Message"],
        "MessageArgs": filled["MessageArgs"],
        "MessageSeverity": filled["MessageSeverity"],
        "OriginOfCondition": {"@odata.id": origin},
    }
    return record
