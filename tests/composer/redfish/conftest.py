"""Helpers for the Redfish service's tests: a client that logs in like a Redfish tool."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from tests.factories.composer import PASSWORD
from tests.support.redfish_demo import DemoService, demo_served


class RedfishClient:
    """The Django test client speaking to /redfish/v1 with a session token."""

    def __init__(self, client: Client, token: str = "") -> None:
        self.client, self.token = client, token

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        """The session's token and `extra` headers (If_Match=... is If-Match)."""
        headers = {"X-Auth-Token": self.token} if self.token else {}
        return {**headers, **{k.replace("_", "-"): v for k, v in extra.items()}}

    def get(self, path: str, **headers: str) -> Any:
        return self.client.get(path, headers=self._headers(headers))

    def post(self, path: str, body: Any, **headers: str) -> Any:
        return self.client.post(
            path, body, content_type="application/json", headers=self._headers(headers)
        )

    def patch(self, path: str, body: Any, **headers: str) -> Any:
        return self.client.patch(
            path, body, content_type="application/json", headers=self._headers(headers)
        )

    def delete(self, path: str, **headers: str) -> Any:
        return self.client.delete(path, headers=self._headers(headers))


@pytest.fixture
def redfish_as() -> Callable[[Any], RedfishClient]:
    """`redfish_as(user)`: a Redfish client logged in as `user` (a real session)."""

    def login(user: Any) -> RedfishClient:
        client = Client()
        answer = client.post(
            "/redfish/v1/SessionService/Sessions",
            {"UserName": user.username, "Password": PASSWORD},
            content_type="application/json",
        )
        assert answer.status_code == 201, answer.content
        return RedfishClient(client, answer["X-Auth-Token"])

    return login


@pytest.fixture(scope="module")
def demo_redfish(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DemoService]:
    """The demo data centre served over HTTP by Daphne, once per test module (DMTF's
    validators are slow): see tests/support/redfish_demo.py."""
    with demo_served(django_db_blocker, tmp_path_factory.mktemp("demo-redfish")) as service:
        yield service


@pytest.fixture
def pooled(synced: Any) -> Any:
    """The tiny synchronised world with its devices in default pools: tenants see (and may
    name) only the blocks of pools, as in the demo."""
    from fabric.services.pools import pools_assign, pools_ensure_defaults

    pools_ensure_defaults(manager=synced)
    pools_assign(manager=synced)
    return synced
