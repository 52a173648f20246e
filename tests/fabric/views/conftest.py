"""Fixtures of the fabric page tests: a logged-in client per persona, the small fabric."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from tests.factories.fabric import SmallFabric, fabric_small

PERSONAS = ["admin_user", "alice", "bob", "carol"]
TENANTS = ["alice", "bob", "carol"]


@pytest.fixture
def small(db: None) -> SmallFabric:
    return fabric_small()


@pytest.fixture
def client_as(client: Client) -> Callable[[Any], Client]:
    """`client_as(user)`: the test client with that user logged in (a real session)."""

    def login(user: Any) -> Client:
        client.force_login(user)
        return client

    return login


@pytest.fixture
def persona(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """`persona("alice")`: the persona fixture of that name."""
    return request.getfixturevalue
