"""Composer's OEM extension of Redfish: what its resources say under `Oem.Composer` where
DMTF's schema has no property for it, and the schema that says what that is.

A composed system holding shares of GPUs lists them in `Oem.Composer.Shares` (Redfish has
no word for part of a processor: `systems.share_of`). Each OEM object carries its
`@odata.type`, whose CSDL (`schemas/Composer_v1.xml`) is served, like `$metadata` and
without credentials, at `SCHEMA_PATH` and referenced from `$metadata`, so that a client or
a validator can read what the extension holds.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from django.http import HttpResponse

from composer.redfish.caller import Call
from composer.redfish.routes import Route
from fabric.redfish_render.build import V1

__all__ = ["NAMESPACES", "ROUTES", "SCHEMA_FILE", "SCHEMA_PATH", "SYSTEM_TYPE", "references"]

SCHEMA_FILE = Path(__file__).parent / "schemas" / "Composer_v1.xml"
SCHEMA_PATH = f"{V1}/Schemas/{SCHEMA_FILE.name}"
NAMESPACES = ("Composer", "Composer.v1_0_0")
SYSTEM_TYPE = "#Composer.v1_0_0.ComputerSystem"  # a ComputerSystem's Oem.Composer


@cache
def _schema() -> bytes:
    return SCHEMA_FILE.read_bytes()


def references() -> dict[str, tuple[str, ...]]:
    """The OEM schemas `$metadata` references: where each is served, and its namespaces."""
    return {SCHEMA_PATH: NAMESPACES}


def schema(call: Call) -> HttpResponse:
    """The CSDL of Composer's OEM extension (an XML document, as `$metadata` is)."""
    return HttpResponse(_schema(), content_type="application/xml")


ROUTES = [Route(SCHEMA_PATH, get=schema)]
