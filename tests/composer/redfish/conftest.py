"""Helpers for the Redfish service's tests: a client that logs in like a Redfish tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from tests.factories.composer import PASSWORD


class RedfishClient:
    """The Django test client speaking to /redfish/v1 with a session token."""

    def __init__(self, client: Client, token: str = "") -> None:
        self.client, self.token = client, token

    def _headers(self, extra: dict[str, str]) -> dict[str, Any]:
        headers = {"HTTP_X_AUTH_TOKEN": self.token} if self.token else {}
        return {**headers, **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in extra.items()}}

    def get(self, path: str, **headers: str) -> Any:
        return self.client.get(path, **self._headers(headers))

    def post(self, path: str, body: Any, **headers: str) -> Any:
        return self.client.post(
            path, body, content_type="application/json", **self._headers(headers)
        )

    def patch(self, path: str, body: Any, **headers: str) -> Any:
        return self.client.patch(
            path, body, content_type="application/json", **self._headers(headers)
        )

    def delete(self, path: str, **headers: str) -> Any:
        return self.client.delete(path, **self._headers(headers))


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
