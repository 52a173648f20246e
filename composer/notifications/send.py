"""One attempt to send a message: a signed webhook POST, or an e-mail through Django's mail
backend. No database here: the caller claims the delivery, calls one of these, and records
the `Outcome`.

A webhook POST never follows a redirect (a receiver that moved says so by failing, and a
redirect cannot lead a tenant's POST somewhere else), waits at most
COMPOSER_WEBHOOK_TIMEOUT_S, and reads at most a few KiB of the answer. A tenant's webhook
may not reach a loopback, private, link-local or reserved address unless
COMPOSER_WEBHOOK_ALLOW_PRIVATE says so: the console's network is not the tenant's to probe.
The name is resolved once, every address checked, and the connection made to a checked
address (TLS still verifies the name): a name that answered a public address to the check
cannot answer a private one to the connection (DNS rebinding). Such a POST goes through no
proxy, which would resolve the name again.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage

from composer.notifications.signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    signature_header,
)

__all__ = ["Outcome", "address_problem", "email_send", "webhook_post"]

USER_AGENT = "Composer-Webhooks/1"
_READ_LIMIT = 4096


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended. `permanent`: trying again cannot help (no retry)."""

    ok: bool
    status_code: int | None = None
    error: str = ""
    elapsed_ms: int = 0
    permanent: bool = False


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


_OPENER = urllib.request.build_opener(_NoRedirects)


class _Pinned:
    """Connections that go to `address` whatever the URL's host name resolves to by then
    (http.client's `_create_connection` is the hook it offers for this)."""

    def __init__(self, address: str) -> None:
        self.address = address

    def connection(self, base: type[http.client.HTTPConnection]) -> Any:
        address = self.address

        def create(where: tuple[str, int], *rest: Any) -> socket.socket:
            return socket.create_connection((address, where[1]), *rest)

        def make(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
            connection = base(*args, **kwargs)
            connection._create_connection = create  # type: ignore[attr-defined]
            return connection

        return make


class _PinnedHTTP(urllib.request.HTTPHandler):
    def __init__(self, pinned: _Pinned) -> None:
        super().__init__()
        self.pinned = pinned

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self.pinned.connection(http.client.HTTPConnection), req)


class _PinnedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, pinned: _Pinned) -> None:
        super().__init__()
        self.pinned = pinned

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(
            self.pinned.connection(http.client.HTTPSConnection),
            req,
            context=self._context,  # type: ignore[attr-defined]
        )


def _pinned_opener(address: str) -> urllib.request.OpenerDirector:
    """An opener that connects to `address` only, through no proxy, following no redirect."""
    pinned = _Pinned(address)
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}), _NoRedirects, _PinnedHTTP(pinned), _PinnedHTTPS(pinned)
    )


def _resolve(host: str) -> list[str]:
    """Every address `host` resolves to (an address resolves to itself)."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))


def _refused(host: str, addresses: Sequence[str]) -> str | None:
    for text in addresses:
        address = ipaddress.ip_address(text)
        if not address.is_global or address.is_multicast:
            return (
                f"{host} is at {address}, a private or reserved address: a tenant's webhook "
                "must reach a public one"
            )
    return None


def address_problem(host: str) -> str | None:
    """Why a tenant's webhook may not reach `host` (a name or an address), or None.

    Every address the name resolves to is checked; a name that does not resolve is left to
    the attempt (it may resolve later)."""
    try:
        addresses = _resolve(host)
    except (OSError, UnicodeError):
        return None
    return _refused(host, addresses)


def webhook_post(
    *,
    url: str,
    secret: str,
    body: bytes,
    delivery_id: str,
    event: str,
    tenant_owned: bool,
    timeout_s: float,
    timestamp: int | None = None,
) -> Outcome:
    """POST `body` to `url`, signed with `secret`; 2xx is success."""
    opener = _OPENER
    if tenant_owned and not getattr(settings, "COMPOSER_WEBHOOK_ALLOW_PRIVATE", False):
        host = urlsplit(url).hostname or ""
        try:
            addresses = _resolve(host)
        except (OSError, UnicodeError) as exc:
            return Outcome(ok=False, error=f"network error: {host} does not resolve: {exc}")
        problem = _refused(host, addresses)
        if problem:
            return Outcome(ok=False, error=problem, permanent=True)
        opener = _pinned_opener(addresses[0])
    stamp = int(time.time()) if timestamp is None else timestamp
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            SIGNATURE_HEADER: signature_header(secret=secret, body=body, timestamp=stamp),
            DELIVERY_HEADER: delivery_id,
            EVENT_HEADER: event,
        },
    )
    started = time.monotonic()

    def took() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        with opener.open(request, timeout=timeout_s) as response:
            response.read(_READ_LIMIT)
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        status = int(exc.code)
        detail = _answer(exc)
        if 300 <= status < 400:
            where = exc.headers.get("Location", "") if exc.headers else ""
            to = f" (to {where[:200]})" if where else ""
            return Outcome(
                ok=False,
                status_code=status,
                error=f"HTTP {status}: redirects are not followed{to}",
                elapsed_ms=took(),
            )
        return Outcome(
            ok=False,
            status_code=status,
            error=f"HTTP {status} {exc.reason}{f': {detail}' if detail else ''}",
            elapsed_ms=took(),
        )
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, TimeoutError | socket.timeout):
            text = f"no answer within {timeout_s:g} s"
        else:
            text = f"{type(reason).__name__}: {reason}"
        return Outcome(ok=False, error=f"network error: {text}", elapsed_ms=took())
    if 200 <= status < 300:
        return Outcome(ok=True, status_code=status, elapsed_ms=took())
    return Outcome(ok=False, status_code=status, error=f"HTTP {status}", elapsed_ms=took())


def _answer(exc: urllib.error.HTTPError) -> str:
    """The first line of an error answer's body (a receiver often says why), short."""
    try:
        text = exc.read(_READ_LIMIT).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return "".join(ch for ch in first if ch.isprintable())[:200]


def email_send(*, subject: str, text: str, recipients: Sequence[str]) -> Outcome:
    """Send one e-mail to `recipients` through EMAIL_BACKEND."""
    started = time.monotonic()
    message = EmailMessage(
        subject=subject,
        body=text,
        from_email=getattr(settings, "COMPOSER_NOTIFY_FROM_EMAIL", None) or None,
        to=list(recipients),
    )
    try:
        sent = message.send(fail_silently=False)
    except Exception as exc:  # smtplib, ssl and socket errors, and whatever a backend raises
        return Outcome(
            ok=False,
            error=f"mail server error: {type(exc).__name__}: {exc}"[:500],
            elapsed_ms=int((time.monotonic() - started) * 1000),
        )
    elapsed = int((time.monotonic() - started) * 1000)
    if not sent:
        return Outcome(ok=False, error="the mail backend sent nothing", elapsed_ms=elapsed)
    return Outcome(ok=True, elapsed_ms=elapsed)
