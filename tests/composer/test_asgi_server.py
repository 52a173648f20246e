"""Under Daphne, the production server: a broken multipart body reaches the API (which says
what is wrong), and a websocket frame refused by the server ends with a close frame
(1009, 1007) instead of a dropped connection (composer.asgi_server)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from composer.services.api_tokens import api_token_issue
from tests.support.daphne import daphne_running

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def daphne_port(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """Daphne on the tests' database."""
    log_path = tmp_path_factory.mktemp("daphne") / "daphne.log"
    with daphne_running(connection.settings_dict, log_path=log_path) as port:
        yield port


def _post(port: int, path: str, body: bytes, content_type: str) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": content_type})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("body", [b"--xyz--\r\n", b"garbage", b"--xyz\r\n\r\n"])
def test_a_broken_multipart_body_gets_the_api_s_answer(daphne_port: int, body: bytes) -> None:
    status, content_type, content = _post(
        daphne_port, "/api/v1/auth/token/", body, "multipart/form-data; boundary=xyz"
    )
    assert (status, content_type) == (415, "application/json"), content
    assert json.loads(content)["code"] == "unsupported_media_type"


@contextmanager
def _ws(port: int, key: str) -> Iterator[Any]:
    from websockets.sync.client import connect

    with connect(
        f"ws://127.0.0.1:{port}/ws/events/",
        additional_headers={"Authorization": f"Token {key}"},
        max_size=None,
        open_timeout=10,
    ) as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "hello"
        yield ws


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ('{"pad": "' + "x" * (2 * 1024 * 1024) + '"}', 1009),  # over Daphne's 1 MiB
        (b'{"action": "\xff\xfe"}', 1007),  # a text frame that is not UTF-8
    ],
    ids=["too-big", "not-utf8"],
)
def test_a_frame_the_server_refuses_is_closed_with_its_code(
    daphne_port: int, alice: Any, frame: str | bytes, code: int
) -> None:
    from websockets.exceptions import ConnectionClosed

    with _ws(daphne_port, api_token_issue(user=alice, remote_addr=None).key) as ws:
        ws.send(frame, text=True)
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=10)
    assert closed.value.rcvd is not None, "the server dropped the connection"
    assert closed.value.rcvd.code == code
