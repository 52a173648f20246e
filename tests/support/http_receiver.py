"""A local HTTP server that receives webhooks in a test: it records each POST (path,
headers, body) and answers the statuses it is told to, in turn (the last one repeats)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that records each POST and answers the next status of
    `answers` (the last one repeats)."""

    answers: list[int]
    received: list[Received] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(*answers: int) -> Receiver:
        state = Receiver(answers=list(answers) or [200])

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                state.received.append(
                    Received(path=self.path, headers=dict(self.headers.items()), body=body)
                )
                status = state.answers.pop(0) if len(state.answers) > 1 else state.answers[0]
                text = b"ok" if status < 300 else b"the receiver is down for maintenance"
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, *args: Any) -> None:
                return None

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/composer"
        return state

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
