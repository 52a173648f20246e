"""The wire to one Redfish service: a signed-in session per manager and process, on DMTF's
`redfish` client library, with every failure turned into a DriverError in an operator's words.

Why a session cache: drivers are constructed per call (registry.get_driver), but a Redfish
service limits its sessions and a login costs a round trip, so one signed-in client is kept
per manager (endpoint, credentials, TLS settings) and process (fabric.drivers.redfish.sessions),
and reused over its keep-alive connections. A 401 in the middle of a
session (it expired, the service restarted) signs in again once and repeats the request.

Credentials are either {"username", "password"} (the driver opens a session) or {"token"}
(a session key issued to the operator: sent as X-Auth-Token, never a login, so a 401 is
final). No message names a credential value, the username included.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redfish
import requests
from redfish.rest.v1 import (
    InvalidCredentialsError,
    JsonDecodingError,
    RetriesExhaustedError,
    ServerDownOrUnreachableError,
    SessionCreationError,
)

from fabric.drivers.base import DriverError, DriverTimeout

logger = logging.getLogger(__name__)

# The library logs request headers at DEBUG, X-Auth-Token included (it redacts only
# Authorization): keep it at WARNING so that a session token never reaches a log.
logging.getLogger("redfish").setLevel(logging.WARNING)

DEFAULT_TIMEOUT_S = 10.0  # each call; far under a compose job's time limit
DEFAULT_TASK_TIMEOUT_S = 60.0  # following a 202 to its end
TASK_POLL_MAX_S = 2.0  # the longest wait between two reads of a task monitor


@dataclass(frozen=True, slots=True)
class Options:
    """How to reach one manager: read from its settings (never its secrets)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    verify_tls: bool = True
    ca_bundle: str = ""

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Options:
        """Settings keys: timeout_s, task_timeout_s, verify_tls (bool), ca_bundle (a path)."""
        try:
            timeout = float(settings.get("timeout_s", DEFAULT_TIMEOUT_S))
            task_timeout = float(settings.get("task_timeout_s", DEFAULT_TASK_TIMEOUT_S))
        except (TypeError, ValueError) as exc:
            raise DriverError(
                "Settings timeout_s and task_timeout_s must be numbers of seconds.",
                permanent=True,
            ) from exc
        if timeout <= 0 or task_timeout <= 0:
            raise DriverError(
                "Settings timeout_s and task_timeout_s must be positive.", permanent=True
            )
        verify = settings.get("verify_tls", True)
        if not isinstance(verify, bool):
            raise DriverError("Setting verify_tls must be true or false.", permanent=True)
        return cls(
            timeout_s=timeout,
            task_timeout_s=task_timeout,
            verify_tls=verify,
            ca_bundle=str(settings.get("ca_bundle") or ""),
        )

    def cafile(self) -> str | None:
        """What the library verifies against: None turns verification off (its default
        when given no file), so verifying without a bundle of our own uses requests' one."""
        if not self.verify_tls:
            return None
        return self.ca_bundle or requests.certs.where()


class NotFound(DriverError):
    """The service has no resource at a path it was asked about (404). Permanent; the
    driver walks the service again and retries once when a path it took from an earlier
    discovery answers it (the resource moved or vanished since)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


@dataclass(slots=True)
class Reply:
    """One answer: status, parsed body (empty when none), headers that matter."""

    status: int
    body: dict[str, Any]
    etag: str = ""
    location: str = ""
    retry_after: float = 0.0


class Session:
    """A signed-in client for one manager, shared by the threads of one process."""

    def __init__(self, endpoint: str, credentials: Mapping[str, str], options: Options) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.options = options
        self._username = str(credentials.get("username") or "")
        self._password = str(credentials.get("password") or "")
        self._token = str(credentials.get("token") or "")
        self._lock = threading.Lock()
        self._client: Any = None
        self.root: dict[str, Any] = {}

    # -- signing in ---------------------------------------------------------------------

    def _connect(self) -> Any:
        """Read the service root and sign in: a session when the service offers one
        (`Links.Sessions`), else HTTP Basic on every request."""
        try:
            client = redfish.redfish_client(
                base_url=self.endpoint,
                timeout=self.options.timeout_s,
                max_retry=0,
                cafile=self.options.cafile(),
            )
        except RetriesExhaustedError as exc:
            raise self._unreachable(exc.__cause__) from exc
        except ServerDownOrUnreachableError as exc:
            status = getattr(getattr(exc, "response", None), "status", None) or 0
            if status >= 500 or status in (408, 429):
                raise DriverError(
                    f"{self.endpoint} failed to answer for its service root ({status}); "
                    "trying again may help.",
                    permanent=False,
                ) from exc
            raise DriverError(
                f"{self.endpoint} answered, but not as a Redfish service: its service root "
                f"/redfish/v1/ answered {status or 'an error'}.",
                permanent=True,
            ) from exc
        except JsonDecodingError as exc:
            raise DriverError(
                f"{self.endpoint} answered, but not as a Redfish service: its service root "
                f"/redfish/v1/ is not a Redfish document ({_first_line(exc)}).",
                permanent=True,
            ) from exc
        root = dict(client.root or {})
        if "RedfishVersion" not in root and "@odata.id" not in root:
            raise DriverError(
                f"{self.endpoint} answered 200, but not with a Redfish service root "
                "(no RedfishVersion, no @odata.id).",
                permanent=True,
            )
        self.root = root
        if self._token:
            # A pre-issued session key: no login, and nothing to sign out of here.
            client.set_session_key(self._token)
            logger.info("redfish %s: using the stored token", self.endpoint)
            return client
        if not self._username:
            raise DriverError(
                "The manager's credentials have no username; set username and password, "
                "or a token.",
                permanent=True,
            )
        sessions = (root.get("Links") or {}).get("Sessions") or {}
        if sessions.get("@odata.id"):
            client.login_url = sessions["@odata.id"]
            try:
                client.login(username=self._username, password=self._password, auth="session")
            except InvalidCredentialsError as exc:
                raise DriverError(
                    f"{self.endpoint} refused the stored credentials (username and password) "
                    "of this manager; correct them in its settings.",
                    permanent=True,
                ) from exc
            except SessionCreationError as exc:
                raise DriverError(
                    f"{self.endpoint} did not open a session: {_first_line(exc)}",
                    permanent=False,
                ) from exc
            except RetriesExhaustedError as exc:
                raise self._unreachable(exc.__cause__) from exc
        else:
            token = base64.b64encode(f"{self._username}:{self._password}".encode()).decode()
            client.set_authorization_key(f"Basic {token}")
        logger.info("redfish %s: signed in", self.endpoint)
        return client

    def _signed_in(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    def _sign_in_again(self, stale: Any) -> Any:
        """Replace a client whose session the service no longer accepts (once per 401)."""
        with self._lock:
            if self._client is stale:
                self._client = None
                self._client = self._connect()
            return self._client

    def reset(self) -> None:
        """Forget the client (the next call signs in again)."""
        with self._lock:
            self._client = None

    def close(self) -> None:
        """Sign out of a session this driver opened (a stored token is the operator's and
        stays valid) and close the connections. Best effort: the service may be gone."""
        with self._lock:
            client, self._client = self._client, None
        if client is None:
            return
        try:
            if self._token:
                client._session.close()
            else:
                client.logout()
        except Exception as exc:  # a dead service must not fail the caller evicting it
            logger.info("redfish %s: signing out failed: %s", self.endpoint, type(exc).__name__)

    # -- requests -----------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        args: Mapping[str, str] | None = None,
    ) -> Reply:
        """One request; a 401 signs in again and repeats it once. Raises DriverError for a
        network failure (transient; DriverTimeout for a timeout); HTTP errors are left to
        the caller (`check`), which knows what a 409 or a 404 means for it."""
        client = self._signed_in()
        reply = self._send(client, method, path, body=body, headers=headers, args=args)
        if reply.status == 401 and self._token:
            raise DriverError(
                f"{self.endpoint} refused the stored token of this manager for {method} "
                f"{path} (401); it cannot sign in again on its own: store a valid token, or "
                "a username and password.",
                permanent=True,
            )
        if reply.status == 401:
            logger.info("redfish %s: session refused (401), signing in again", self.endpoint)
            client = self._sign_in_again(client)
            reply = self._send(client, method, path, body=body, headers=headers, args=args)
            if reply.status == 401:
                raise DriverError(
                    f"{self.endpoint} refused the stored credentials of this manager for "
                    f"{method} {path} (401).",
                    permanent=True,
                )
        return reply

    def _send(
        self,
        client: Any,
        method: str,
        path: str,
        *,
        body: Any,
        headers: Mapping[str, str] | None,
        args: Mapping[str, str] | None,
    ) -> Reply:
        call = getattr(client, method.lower())
        kwargs: dict[str, Any] = {"headers": dict(headers or {})}
        if args:
            kwargs["args"] = dict(args)
        if body is not None:
            kwargs["body"] = body
        try:
            raw = call(path, **kwargs)
        except RetriesExhaustedError as exc:
            raise self._unreachable(exc.__cause__, f"{method} {path}") from exc
        text = raw.text if raw.read else ""
        parsed: dict[str, Any] = {}
        if text.strip():
            try:
                loaded = raw.dict
            except JsonDecodingError as exc:
                if raw.status < 300:
                    raise DriverError(
                        f"{self.endpoint} answered {method} {path} with {raw.status} and a "
                        "body that is not JSON: not a Redfish service.",
                        permanent=True,
                    ) from exc
                loaded = {}
            parsed = loaded if isinstance(loaded, dict) else {"value": loaded}
        retry_after = raw.getheader("Retry-After")
        try:
            wait = float(retry_after) if retry_after else 0.0
        except ValueError:
            wait = 0.0
        return Reply(
            status=raw.status,
            body=parsed,
            etag=raw.getheader("ETag") or "",
            location=raw.getheader("Location") or "",
            retry_after=wait,
        )

    def _unreachable(self, cause: BaseException | None, what: str = "") -> DriverError:
        """The network failure behind a library error, in an operator's words."""
        where = f" ({what})" if what else ""
        if isinstance(cause, requests.exceptions.SSLError):
            hint = (
                f"ca_bundle {self.options.ca_bundle!r}"
                if self.options.ca_bundle
                else "the system's CA bundle"
            )
            return DriverError(
                f"The TLS certificate of {self.endpoint} does not verify against {hint}; "
                "set ca_bundle to its CA, or verify_tls false to trust it unverified.",
                permanent=True,
            )
        if isinstance(cause, requests.exceptions.Timeout):
            return DriverTimeout(
                f"{self.endpoint} did not answer within {self.options.timeout_s:g} s{where}; "
                "the operation may have happened."
            )
        return DriverError(
            f"{self.endpoint} is unreachable{where}: {_first_line(cause) or 'no answer'}.",
            permanent=False,
        )

    # -- answers ------------------------------------------------------------------------

    def check(self, reply: Reply, what: str) -> Reply:
        """Raise the DriverError an HTTP error status means; return the reply otherwise."""
        status = reply.status
        if status < 400:
            return reply
        detail = _message(reply.body)
        tail = f": {detail}" if detail else ""
        if status == 409:
            raise DriverError(
                f"{self.endpoint} refused to {what}: the resource is in use or in conflict "
                f"(409){tail}",
                permanent=True,
            )
        if status == 412:
            raise DriverError(
                f"{self.endpoint} refused to {what}: the resource changed since it was read "
                f"(412){tail}",
                permanent=True,
            )
        if status == 404:
            raise NotFound(f"{self.endpoint} has no such resource to {what} (404){tail}")
        if status in (408, 429) or status >= 500:
            raise DriverError(
                f"{self.endpoint} failed to {what} ({status}){tail}; trying again may help.",
                permanent=False,
            )
        raise DriverError(f"{self.endpoint} refused to {what} ({status}){tail}", permanent=True)

    def follow(self, reply: Reply, what: str) -> Reply:
        """Follow a 202 through its task monitor to the final answer (checked)."""
        deadline = time.monotonic() + self.options.task_timeout_s
        while reply.status == 202:
            monitor = reply.location
            if not monitor:
                raise DriverError(
                    f"{self.endpoint} accepted the request to {what} (202) but gave no task "
                    "monitor to follow.",
                    permanent=False,
                )
            if time.monotonic() > deadline:
                raise DriverTimeout(
                    f"{self.endpoint} had not finished the task to {what} after "
                    f"{self.options.task_timeout_s:g} s; it may still complete."
                )
            time.sleep(min(reply.retry_after or 0.05, TASK_POLL_MAX_S))
            reply = self.request("GET", monitor)
            task_state = str(reply.body.get("TaskState") or "")
            if reply.status == 200 and task_state in ("Exception", "Killed", "Cancelled"):
                raise DriverError(
                    f"The task to {what} on {self.endpoint} ended {task_state}: "
                    f"{_message(reply.body) or 'no message'}",
                    permanent=True,
                )
            if reply.status == 200 and task_state in ("New", "Starting", "Running", "Pending"):
                reply.status = 202
                reply.location = monitor
        return self.check(reply, what)


def _message(body: Mapping[str, Any]) -> str:
    """The first message of a Redfish error or task body that says what went wrong: a
    GeneralError's own text says only "see Resolution", so its Resolution (or the
    error's message) is what is said instead."""
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    assert isinstance(error, Mapping)
    for info in error.get("@Message.ExtendedInfo") or error.get("Messages") or []:
        if not isinstance(info, dict) or not info.get("Message"):
            continue
        if str(info.get("MessageId") or "").endswith(".GeneralError"):
            said = str(error.get("message") or info.get("Resolution") or "")
            return said if said and said != "None." else str(info["Message"])
        return str(info["Message"])
    return str(error.get("message") or "")


def _first_line(exc: BaseException | None) -> str:
    return str(exc or "").strip().splitlines()[0] if str(exc or "").strip() else ""
