"""A small Redfish service for tests: serves a mockup folder (one `index.json` per path
under /redfish/v1/) from memory, with composition semantics and fault knobs.

It keeps state, so the driver's writes are seen by its next reads: sessions (X-Auth-Token,
HTTP Basic too), ETags and If-Match (412), PATCH of a system's `Links.ResourceBlocks`, POST
to the Systems collection and DELETE of a composed system, the Compose action (Preview /
Apply), memory chunks and connections, a block composed twice refused (409), and 202 task
monitors. Knobs on `MockService`: `delay_s`, `fail_next(method, status)`, `failing` (a path, or
`path?$expand` for its expanded reads only, answered with a status every time), `expire_sessions()`,
`issue_token()` (a pre-issued token),
`async_tasks`/`fail_tasks`, `reset_next(method, applied=...)`, `slow_next(method, s)`,
`touch_before_next_write(path)`, `garbage_root`, `events` (the SSE stream: redfish_sse.py).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.redfish_sse import SSE_PATH, EventHub

ROOT = "/redfish/v1"
USERNAME, PASSWORD = "operator", "s3cret-pass"
Answer = tuple[int, dict[str, Any] | None, dict[str, str]]


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _ids(value: Any) -> list[str]:
    return [str(v["@odata.id"]).rstrip("/") for v in value or [] if isinstance(v, dict)]


class MockService:
    """The service's state and knobs; one lock serialises every request."""

    def __init__(self, folder: Path) -> None:
        self.resources: dict[str, dict[str, Any]] = {}
        for file in folder.rglob("index.json"):
            rel = file.parent.relative_to(folder).as_posix()
            path = ROOT if rel == "." else f"{ROOT}/{rel}"
            self.resources[path] = json.loads(file.read_text())
        self.lock = threading.RLock()
        self.tokens: set[str] = set()
        self.counter = itertools.count(1)
        self.tasks: dict[str, dict[str, Any]] = {}
        self.log: list[tuple[str, str]] = []
        self.delay_s = 0.0
        self.async_tasks = False
        self.fail_tasks = False
        self.task_polls = 1
        self.garbage_root = False
        self.failing: dict[str, int] = {}
        self._fail: list[tuple[str, int]] = []
        self._reset: tuple[str, bool] | None = None
        self._touch: str = ""
        self._slow: dict[str, float] = {}
        self.events = EventHub()  # the SSE stream (tests/support/redfish_sse.py)

    # -- knobs -------------------------------------------------------------------------

    def fail_next(self, method: str, status: int) -> None:
        self._fail.append((method, status))

    def touch_before_next_write(self, path: str) -> None:
        """Change `path` just before the next write: a client holding its ETag is stale."""
        self._touch = path

    def slow_next(self, method: str, seconds: float) -> None:
        """Apply the next `method` request, then wait `seconds` before answering it."""
        self._slow[method] = seconds

    def expire_sessions(self) -> None:
        self.tokens.clear()

    def issue_token(self) -> str:
        """A session key issued out of band (as an operator would store it): accepted as
        X-Auth-Token without a login, until `expire_sessions()`."""
        with self.lock:
            token = f"token-{next(self.counter)}"
            self.tokens.add(token)
            return token

    def reset_next(self, method: str, *, applied: bool) -> None:
        """Drop the connection of the next `method` request, after applying it or not."""
        self._reset = (method, applied)

    def logins(self) -> int:
        return sum(1 for m, p in self.log if m == "POST" and p == self.sessions_path())

    # -- reading -----------------------------------------------------------------------

    def sessions_path(self) -> str:
        sessions = (self.resources[ROOT].get("Links") or {}).get("Sessions") or {}
        return str(sessions.get("@odata.id") or "").rstrip("/")

    def etag(self, path: str) -> str:
        body = json.dumps(self.resources[path], sort_keys=True).encode()
        return f'"{hashlib.sha256(body).hexdigest()[:16]}"'

    def get(self, path: str, query: dict[str, list[str]]) -> Answer:
        if path in self.tasks:
            return self._poll(path)
        if path not in self.resources:
            return 404, {"error": {"message": f"{path} not found"}}, {}
        body = copy.deepcopy(self.resources[path])
        if "$expand" in query and "Members" in body:
            body["Members"] = [
                copy.deepcopy(self.resources.get(m, {"@odata.id": m}))
                for m in _ids(body["Members"])
            ]
        elif "$expand" in query:  # a resource's own navigation properties (not its Links)
            for name, value in body.items():
                if isinstance(value, dict) and set(value) == {"@odata.id"}:
                    body[name] = copy.deepcopy(self.resources.get(value["@odata.id"], value))
        return 200, body, {"ETag": self.etag(path)}

    # -- composing ---------------------------------------------------------------------

    def set_blocks(self, system: str, blocks: list[str]) -> None:
        """Compose `blocks` into `system`, releasing the ones it no longer lists."""
        for block in blocks:
            resource = self.resources.get(block)
            if resource is None:
                raise Refused(400, f"no resource block {block}")
            holders = _ids((resource.get("Links") or {}).get("ComputerSystems"))
            status = resource.get("CompositionStatus") or {}
            shared = status.get("SharingCapable") and status.get("SharingEnabled")
            if holders and system not in holders and not shared:
                raise Refused(409, f"resource block {block} is composed into {holders[0]}")
        old = _ids((self.resources[system].get("Links") or {}).get("ResourceBlocks"))
        for block in set(old) - set(blocks):
            links = self.resources[block].setdefault("Links", {})
            links["ComputerSystems"] = [
                {"@odata.id": s} for s in _ids(links.get("ComputerSystems")) if s != system
            ]
            if not links["ComputerSystems"]:
                self.resources[block].setdefault("CompositionStatus", {})["CompositionState"] = (
                    "Unused"
                )
        for block in set(blocks) - set(old):
            links = self.resources[block].setdefault("Links", {})
            links["ComputerSystems"] = [*links.get("ComputerSystems", []), {"@odata.id": system}]
            self.resources[block].setdefault("CompositionStatus", {})["CompositionState"] = (
                "Composed"
            )
        self.resources[system].setdefault("Links", {})["ResourceBlocks"] = [
            {"@odata.id": b} for b in blocks
        ]

    def new_member(self, collection: str, body: dict[str, Any], **extra: Any) -> str:
        path = f"{collection}/composer-{next(self.counter)}"
        self.resources[path] = {**body, **extra, "@odata.id": path, "Id": path.rsplit("/", 1)[1]}
        self.resources[collection]["Members"].append({"@odata.id": path})
        return path

    def remove_member(self, path: str) -> None:
        for resource in self.resources.values():
            if isinstance(resource.get("Members"), list):
                resource["Members"] = [
                    m
                    for m in resource["Members"]
                    if str(m.get("@odata.id", "")).rstrip("/") != path
                ]
        del self.resources[path]

    def compose(self, body: dict[str, Any]) -> Answer:
        if body.get("RequestType") not in ("Preview", "Apply"):
            raise Refused(400, "RequestType must be Preview or Apply")
        stanzas = (body.get("Manifest") or {}).get("Stanzas") or []
        if body["RequestType"] == "Apply":
            for stanza in stanzas:
                blocks = _ids((stanza.get("Request") or {}).get("Links", {}).get("ResourceBlocks"))
                holders = {
                    s
                    for b in blocks
                    for s in _ids(
                        (self.resources.get(b, {}).get("Links") or {}).get("ComputerSystems")
                    )
                }
                system = (
                    sorted(holders)[0]
                    if holders
                    else self.new_member(
                        f"{ROOT}/Systems", {"Name": "Composed", "SystemType": "Composed"}
                    )
                )
                self.set_blocks(system, blocks)
                stanza["Response"] = {"@odata.id": system}
        return 200, body, {}

    # -- writes ------------------------------------------------------------------------

    def write(self, method: str, path: str, body: dict[str, Any], headers: Any) -> Answer:
        if method == "PATCH":
            if path not in self.resources:
                return 404, None, {}
            match = headers.get("If-Match")
            if match and match != self.etag(path):
                raise Refused(412, f"{path} changed since it was read")
            if "ResourceBlocks" in (body.get("Links") or {}):
                self.set_blocks(path, _ids(body["Links"]["ResourceBlocks"]))
            return 200, self.resources[path], {"ETag": self.etag(path)}
        if method == "DELETE":
            if path not in self.resources:
                return 404, None, {}
            if path.startswith(f"{ROOT}/Systems/"):
                self.set_blocks(path, [])
            self.remove_member(path)
            return 204, None, {}
        if path.endswith("/Actions/CompositionService.Compose"):
            return self.compose(body)
        if path == f"{ROOT}/Systems":
            system = self.new_member(path, {"SystemType": "Composed", "Name": body.get("Name")})
            try:
                self.set_blocks(system, _ids((body.get("Links") or {}).get("ResourceBlocks")))
            except Refused:
                self.remove_member(system)
                raise
            return 201, self.resources[system], {"Location": system}
        if path.endswith("/MemoryChunks") and path in self.resources:
            domain = self.resources[path.rsplit("/", 1)[0]]
            used = sum(
                self.resources[m].get("MemoryChunkSizeMiB", 0)
                for m in _ids(self.resources[path]["Members"])
            )
            if used + int(body.get("MemoryChunkSizeMiB") or 0) > domain.get("MemorySizeMiB", 0):
                raise Refused(400, "not enough free memory in the domain")
            chunk = self.new_member(path, body)
            return 201, self.resources[chunk], {"Location": chunk}
        if path.endswith("/Connections") and path in self.resources:
            connection = self.new_member(path, body)
            return 201, self.resources[connection], {"Location": connection}
        return 405, {"error": {"message": f"{method} not allowed on {path}"}}, {}

    def run(self, method: str, path: str, body: dict[str, Any], headers: Any) -> Answer:
        try:
            return self.write(method, path, body, headers)
        except Refused as exc:
            return exc.status, {"error": {"message": exc.message}}, {}

    def defer(self, op: Callable[[], Answer]) -> Answer:
        monitor = f"{ROOT}/TaskService/TaskMonitors/{next(self.counter)}"
        self.tasks[monitor] = {"polls": self.task_polls, "op": op}
        return 202, None, {"Location": monitor, "Retry-After": "0"}

    def _poll(self, monitor: str) -> Answer:
        task = self.tasks[monitor]
        if task["polls"] > 0:
            task["polls"] -= 1
            return 202, None, {"Location": monitor, "Retry-After": "0"}
        del self.tasks[monitor]
        if self.fail_tasks:
            return (
                200,
                {
                    "TaskState": "Exception",
                    "Messages": [{"Message": "The operation failed on the composition manager."}],
                },
                {},
            )
        return task["op"]()


class _Handler(BaseHTTPRequestHandler):
    service: MockService
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, delayed ACKs stall each one.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _authorised(self, path: str) -> bool:
        if path in (ROOT, f"{ROOT}/odata", f"{ROOT}/$metadata"):
            return True
        if self.headers.get("X-Auth-Token") in self.service.tokens:
            return True
        basic = base64.b64encode(f"{USERNAME}:{PASSWORD}".encode()).decode()
        return self.headers.get("Authorization") == f"Basic {basic}"

    def _send(self, answer: Answer) -> None:
        status, body, headers = answer
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _reset(self) -> None:
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def finish(self) -> None:
        with suppress(OSError, ValueError):
            super().finish()

    def _handle(self, method: str) -> None:
        service = self.service
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw.strip() else {}
        time.sleep(service.delay_s)
        if method == "GET" and path == SSE_PATH:  # streamed, outside the lock
            return service.events.serve(self, self._authorised(path))
        with service.lock:
            service.log.append((method, path))
            if service.garbage_root and path == ROOT:
                self.send_response(200)
                self.send_header("Content-Length", "17")
                self.end_headers()
                self.wfile.write(b"<html>hi</html>\n\n")
                return
            key = f"{path}?$expand" if "$expand" in parse_qs(url.query) else path
            if key in service.failing:
                status = service.failing[key]
                return self._send((status, {"error": {"message": "injected"}}, {}))
            failure = next((f for f in service._fail if f[0] == method), None)
            if failure:
                service._fail.remove(failure)
                return self._send((failure[1], {"error": {"message": "injected"}}, {}))
            if method == "POST" and path == service.sessions_path():
                if (body.get("UserName"), body.get("Password")) != (USERNAME, PASSWORD):
                    return self._send((401, {"error": {"message": "bad credentials"}}, {}))
                token = f"token-{next(service.counter)}"
                service.tokens.add(token)
                return self._send(
                    (201, {"Id": token}, {"X-Auth-Token": token, "Location": f"{path}/{token}"})
                )
            if not self._authorised(path):
                return self._send((401, {"error": {"message": "sign in"}}, {}))
            if method == "GET":
                return self._send(service.get(path, parse_qs(url.query)))
            if service._touch in service.resources:
                service.resources[service._touch]["Description"] = (
                    f"changed {next(service.counter)}"
                )
                service._touch = ""
            if service._reset and service._reset[0] == method:
                applied = service._reset[1]
                service._reset = None
                if applied:
                    service.run(method, path, body, self.headers)
                return self._reset()
            if service.async_tasks:
                headers = dict(self.headers.items())
                return self._send(service.defer(lambda: service.run(method, path, body, headers)))
            answer = service.run(method, path, body, self.headers)
            slow = service._slow.pop(method, 0.0)
        time.sleep(slow)  # outside the lock: the service goes on answering others meanwhile
        with suppress(OSError):  # the client may have given up waiting
            self._send(answer)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


@contextmanager
def serve(folder: Path, *, tls: tuple[str, str] | None = None) -> Iterator[tuple[MockService, str]]:
    """Serve the mockup in `folder` on a free local port; yields (service, base URL)."""
    service = MockService(folder)
    handler = type("Handler", (_Handler,), {"service": service})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    scheme = "http"
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield service, f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
