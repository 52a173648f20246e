"""DMTF's Redfish mockups, served over HTTP by tests/support/redfish_server.py.

The mockups are read in place from `shared/data/redfish-mockups` beside the repository
(or above it), or from $REDFISH_MOCKUPS; tests that need them skip, naming the folder,
where it is absent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from fabric.drivers.redfish import known, sessions
from fabric.drivers.redfish.driver import RedfishDriver
from tests.support.redfish_server import PASSWORD, USERNAME, MockService, serve
from tests.support.shared_data import shared_data

MOCKUPS_NAME = "shared/data/redfish-mockups"


def mockups_folder() -> Path | None:
    """Where the mockups are: $REDFISH_MOCKUPS, else shared/data/ in the repository or
    beside it (or beside a folder above it)."""
    return shared_data("redfish-mockups", env="REDFISH_MOCKUPS")


def mockup(name: str) -> Path:
    """The folder of one mockup, or skip the test naming what is missing."""
    folder = mockups_folder()
    if folder is None or not (folder / name / "index.json").is_file():
        pytest.skip(
            f"the Redfish mockups are absent: no {MOCKUPS_NAME}/{name} beside the repository"
        )
    return folder / name


def driver_for(url: str, **settings: Any) -> RedfishDriver:
    return RedfishDriver(
        endpoint=url,
        settings={"timeout_s": 5, **settings},
        credentials={"username": USERNAME, "password": PASSWORD},
    )


Served = Callable[[str], AbstractContextManager[tuple[MockService, str]]]


@pytest.fixture
def served() -> Iterator[Served]:
    """`with served("public-cxl") as (service, url):` a mockup on a local port."""

    def start(name: str) -> AbstractContextManager[tuple[MockService, str]]:
        return serve(mockup(name))

    yield start


@pytest.fixture(autouse=True)
def own_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own session cache: sessions left by earlier tests (their servers gone)
    would otherwise be evicted, and signed out, in the middle of a later one."""
    monkeypatch.setattr(sessions, "_SESSIONS", type(sessions._SESSIONS)())
    # Each test its own discoveries too: a port reused by a later test's server would
    # otherwise find an earlier world's discovery.
    monkeypatch.setattr(known, "_KNOWN", type(known._KNOWN)())
