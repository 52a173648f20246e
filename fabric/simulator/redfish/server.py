"""The simulated world served as Redfish over HTTP: a threaded stdlib server.

`serve_world(fabric_name)` runs it in a background thread for as long as the `with`
block lasts and yields its base URL; `manage.py simulator_redfish` runs it in the
foreground. Every request reads the simulator's shared state (the database), so what the
console, the simulated driver and `sim_fault` do is seen here at once, and the other way
round. The rendered tree is kept until the state changes (`world.version`).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from django.db import close_old_connections, connections

from fabric.drivers.base import DriverError
from fabric.redfish_render import documents
from fabric.redfish_render.build import Resource
from fabric.redfish_render.errors import error_body
from fabric.redfish_render.messages import message
from fabric.simulator.redfish import auth, events, paths, sensors, tasks, tree, world, writes

logger = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/redfish", paths.V1, f"{paths.V1}/odata", f"{paths.V1}/$metadata"})
# How long the reply of an injected timeout is held before the connection is dropped:
# past any client's timeout, so that the client sees a timeout, not an answer.
LOST_REPLY_S = 30.0
KEEP_ALIVE_S = 5.0  # a comment line on a quiet event stream this often
Answer = tuple[int, Any, dict[str, str]]


class Service:
    """The state of one server: its fabric, account, sessions, chunks and rendering."""

    def __init__(
        self,
        fabric_name: str,
        accounts: auth.Accounts,
        lost_reply_s: float,
        task_after_s: float | None = None,
    ) -> None:
        self.fabric_name = fabric_name
        self.accounts = accounts
        self.pending = world.PendingChunks()
        self.lost_reply_s = lost_reply_s
        self.stopping = threading.Event()
        self.clients: dict[socket.socket, threading.Thread] = {}  # open keep-alive clients
        self._lock = threading.Lock()
        # (key, world, tree) of the elements alone, then with the bindings shown.
        self._unbound: tuple[tuple[Any, ...], world.World, dict[str, Resource]] | None = None
        self._cached: tuple[tuple[Any, ...], world.World, dict[str, Resource]] | None = None
        self._sensors: sensors.Sensors | None = None  # of the elements last read
        self.events = events.Events(lambda: self.current()[0], self.stopping)
        self.tasks = tasks.Tasks(fabric_name, task_after_s)

    def current(self) -> tuple[world.World, dict[str, Resource]]:
        """The world and its tree as they are now: the elements' rendering is kept until
        an element changes, and the bindings are shown on it again after a bind."""
        key = (*world.version(self.fabric_name, self.pending), self.accounts.changes)
        elements_key = (*key[:2], key[-1])
        with self._lock:
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1], self._cached[2]
            if self._unbound is None or self._unbound[0] != elements_key:
                loaded = world.load(self.fabric_name, self.pending)
                unbound = tree.render_unbound(loaded, self.accounts.sessions())
                self._unbound = (elements_key, loaded, unbound)
            else:
                loaded = world.with_bindings(self._unbound[1], self.pending)
            self._cached = (key, loaded, tree.bind(self._unbound[2], loaded))
            return self._cached[1], self._cached[2]

    def lookup(self, current: world.World, resources: dict[str, Resource]) -> documents.Lookup:
        """How a GET finds a resource: a task as it is now (tasks.py), in the rendered
        tree, else a metrics resource read now (its values move with time, sensors.py)."""
        with self._lock:
            if self._sensors is None or self._sensors.elements is not current.by_id:
                self._sensors = sensors.Sensors(current)
            found = self._sensors
        now = time.time()

        def find(path: str) -> Resource | None:
            return (
                self.tasks.find(path)
                or resources.get(path)
                or found.get(path, now, current.bindings)
            )

        return find

    # -- answers ---------------------------------------------------------------------

    def get(self, path: str, query: Mapping[str, list[str]], authed: bool) -> Answer:
        if path == "/redfish":
            return 200, {"v1": f"{paths.V1}/"}, {}
        if path == paths.V1 and authed:
            writes.begin_read(self.fabric_name)
        current, resources = self.current()
        monitored = self.tasks.monitor(path)
        if monitored is not None:
            return monitored
        if path == f"{paths.V1}/odata":
            return 200, tree.odata(resources), {}
        if path == f"{paths.V1}/$metadata":
            return 200, tree.metadata(resources), {"Content-Type": "application/xml"}
        find = self.lookup(current, resources)
        found = find(path)
        if found is None:
            raise writes.Refused(404, f"There is no resource at {path}.")
        if "$expand" in query:
            body = documents.expand(find, found, query["$expand"][0])
            if body is None:
                raise writes.Refused(400, "$expand supports ., * and ~ with $levels=1 only.")
            return 200, body, {}
        return 200, found, {"ETag": documents.etag(found)}

    def write(self, method: str, path: str, body: dict[str, Any], if_match: str) -> Answer:
        if method == "POST" and path == paths.SESSIONS:
            opened = self.accounts.login(body.get("UserName"), body.get("Password"))
            if opened is None:
                raise writes.Refused(401, "The user name or password is not valid.")
            session_id, token = opened
            location = f"{paths.SESSIONS}/{session_id}"
            _world, resources = self.current()
            return 201, resources[location], {"X-Auth-Token": token, "Location": location}
        if method == "DELETE" and paths.under(path, paths.SESSIONS) is not None:
            if not self.accounts.logout(paths.last(path)):
                raise writes.Refused(404, f"No session {path}.")
            return 204, None, {}
        current, resources = self.current()
        host = paths.under(path, paths.SYSTEMS)
        if method == "PATCH" and host is not None and path in resources:
            if if_match and if_match != documents.etag(resources[path]):
                raise writes.Refused(412, f"{path} changed since it was read (If-Match).")

            def patch() -> Answer:
                writes.patch_system(current, host, body)
                _world, patched = self.current()
                return 200, patched[path], {"ETag": documents.etag(patched[path])}

            if self.tasks.wanted():  # takes long: 202 and a task monitor (tasks.py)
                return self.tasks.start(f"change the blocks of {path}", patch, _refusal)
            return patch()
        if method == "POST" and path == paths.CONNECTIONS:
            location = writes.create_connection(current, self.pending, body)
        elif method == "POST" and path.endswith("/MemoryChunks"):
            location = writes.create_chunk(current, self.pending, path, body)
        elif method == "DELETE":
            writes.delete(current, self.pending, path)
            return 204, None, {}
        elif path in resources:
            raise writes.Refused(405, f"{method} is not allowed on {path}.")
        else:
            raise writes.Refused(404, f"There is no resource at {path}.")
        _world, resources = self.current()
        return 201, resources.get(location), {"Location": location}


def _refusal(status: int, message: str) -> Answer:
    return status, _error(status, message), {}


def _error(status: int, text: str) -> dict[str, Any]:
    return error_body(text, [message("Base.GeneralError", resolution=text)])


class Handler(BaseHTTPRequestHandler):
    """One client connection (HTTP/1.1 keep-alive): its requests, one after another."""

    service: Service
    protocol_version = "HTTP/1.1"
    server_version = "ComposerSimulatedRedfish/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("redfish %s %s", self.command, self.path)  # never a header

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.service.clients[self.connection] = threading.current_thread()

    def finish(self) -> None:
        with suppress(OSError, ValueError):
            super().finish()
        self.service.clients.pop(self.connection, None)
        connections.close_all()  # this thread's database connection ends with its client

    def _send(self, answer: Answer) -> None:
        status, body, headers = answer
        if isinstance(body, str):
            data = body.encode()
        else:
            data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("OData-Version", "4.0")
        self.send_header("Cache-Control", "no-cache")
        for name, value in headers.items():
            self.send_header(name, value)
        if data and "Content-Type" not in headers:
            self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _lose(self) -> None:
        """An injected timeout: hold the reply past the client's patience, then hang up."""
        connections.close_all()
        self.service.stopping.wait(self.service.lost_reply_s)
        self.close_connection = True

    def _stream(self) -> None:
        """Serve the event stream (events.py) until the client or the server goes: the
        events after the client's Last-Event-ID first, then each as it happens, with a
        comment line when there is none, so that a client that left is noticed."""
        last = self.headers.get("Last-Event-ID") or ""
        sent = int(last) if last.isdigit() else 0
        self.service.events.open()
        connections.close_all()  # no database connection held while streaming
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            quiet_since = time.monotonic()
            while not self.service.stopping.is_set():
                pending = self.service.events.log.after(sent, wait_s=events.WATCH_S)
                for event_id, body in pending:
                    self.wfile.write(f"id: {event_id}\ndata: {json.dumps(body)}\n\n".encode())
                    sent = event_id
                if pending or time.monotonic() - quiet_since >= KEEP_ALIVE_S:
                    if not pending:
                        self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    quiet_since = time.monotonic()
        except OSError:
            pass  # the client went away
        finally:
            self.service.events.close()

    def _handle(self) -> None:
        method = self.command
        url = urlsplit(self.path)
        path = "/".join(paths.seg(unquote(p)) if p else p for p in url.path.rstrip("/").split("/"))
        path = path or "/"
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        close_old_connections()
        try:
            authed = self.service.accounts.authorised(
                self.headers.get("X-Auth-Token"), self.headers.get("Authorization")
            )
            open_login = method == "POST" and path == paths.SESSIONS
            if not authed and not open_login and not (method == "GET" and path in OPEN_PATHS):
                raise writes.Refused(401, "Sign in: a session token or HTTP Basic is required.")
            if method == "GET" and path == events.SSE:
                return self._stream()
            if method == "GET":
                answer = self.service.get(path, parse_qs(url.query), authed)
            else:
                try:
                    body = json.loads(raw) if raw.strip() else {}
                except ValueError as exc:
                    raise writes.Refused(400, "The request body is not JSON.") from exc
                if not isinstance(body, dict):
                    raise writes.Refused(400, "The request body must be a JSON object.")
                answer = self.service.write(method, path, body, self.headers.get("If-Match", ""))
        except writes.LostReply:
            return self._lose()
        except writes.Refused as refused:
            answer = (refused.status, _error(refused.status, refused.message), {})
        except DriverError as exc:  # the fabric is gone, say
            status = 404 if exc.permanent else 503
            answer = (status, _error(status, exc.message), {})
        if answer[0] == 401:
            answer[2]["WWW-Authenticate"] = 'Basic realm="Redfish"'

        with suppress(OSError):  # the client may have given up waiting
            self._send(answer)

    # Every method goes the same way: `_handle` reads `self.command`.
    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle


def make_server(
    fabric_name: str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    username: str | None = None,
    password: str | None = None,
    lost_reply_s: float = LOST_REPLY_S,
    task_after_s: float | None = None,
) -> ThreadingHTTPServer:
    """A server (not yet serving) for the simulated fabric `fabric_name`; the account
    defaults to the settings' (auth.credentials()). A PATCH of a system whose modelled
    latency is `task_after_s` or more is answered 202 with a task monitor (None: never)."""
    account = auth.credentials()
    accounts = auth.Accounts(username or account["username"], password or account["password"])
    service = Service(fabric_name, accounts, lost_reply_s, task_after_s)
    handler = type("BoundHandler", (Handler,), {"service": service})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


@contextmanager
def serve_world(
    fabric_name: str, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> Iterator[str]:
    """Serve the simulated fabric `fabric_name` as Redfish in a background thread; yields
    the base URL (e.g. "http://127.0.0.1:54321"). Port 0 picks a free one. `options` are
    make_server's: the account (auth.credentials() unless `username`/`password` are
    given), `lost_reply_s` and `task_after_s`."""
    server = make_server(fabric_name, host, port, **options)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    bound_host, bound_port = server.server_address[:2]
    try:
        yield f"http://{bound_host!s}:{bound_port}"
    finally:
        stop(server)


def stop(server: ThreadingHTTPServer) -> None:
    """Stop serving and hang up on every client still connected, so that no thread
    keeps a database connection (or a held reply) after the server is gone."""
    service: Service = server.RequestHandlerClass.service  # type: ignore[attr-defined]
    service.stopping.set()
    server.shutdown()
    server.server_close()
    for sock, thread in list(service.clients.items()):
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        thread.join(timeout=5)
    service.events.join(timeout=5)
