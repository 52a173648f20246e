"""What `make run` (composer.launcher) asks to know its children are up: the web server and
the console's /readyz, the workers' pings, and whether the port is free. Each answers yes or
no (and /readyz what is not ready) and never raises: a child still starting is "not yet".
"""

from __future__ import annotations

import http.client
import json
import socket

__all__ = ["HOST", "console_ready", "port_free", "web_answers", "workers_answer"]

HOST = "127.0.0.1"  # the ASGI server listens on loopback only


def web_answers(port: str, path: str = "/accounts/login/") -> bool:
    """Whether a server on `port` answers `path` (any HTTP answer: it is up); by default
    whether the ASGI server serves the login page."""
    connection = http.client.HTTPConnection(HOST, int(port), timeout=5)
    try:
        connection.request("GET", path)
        connection.getresponse().read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    return True


def console_ready(port: str) -> tuple[bool, str]:
    """Whether the console's /readyz answers 200; else what it says is not ready."""
    connection = http.client.HTTPConnection(HOST, int(port), timeout=5)
    try:
        connection.request("GET", "/readyz")
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return False, "the web server did not answer"
    finally:
        connection.close()
    if response.status == 200:
        return True, ""
    try:
        checks = json.loads(body).get("checks", {})
        failed = [f"{name}: {c.get('detail', '')}" for name, c in checks.items() if not c["ok"]]
    except (ValueError, AttributeError, KeyError, TypeError):
        failed = []
    return False, "; ".join(failed) or f"/readyz answered {response.status}"


def workers_answer(broker_url: str, workers: list[str]) -> bool:
    """Whether every Celery worker named in `workers` answers a ping through the broker.

    A bare Celery app on the broker's URL: the launcher's own process never loads Django.
    """
    from celery import Celery

    app = Celery("composer-launcher", broker=broker_url)
    try:
        pongs = app.control.ping(destination=workers, timeout=1.0) or []
        return set(workers) <= {name for pong in pongs for name in pong}
    except Exception:  # the broker not reachable yet, or gone: not ready
        return False
    finally:
        app.close()


def port_free(port: str) -> bool:
    """Whether nothing listens on the port yet: another program there would answer the
    readiness check in the web server's stead."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, int(port)))
        except OSError:
            return False
    return True
