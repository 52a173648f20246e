"""`make run`: the whole console on one machine with one command.

Starts (in order) an embedded Redis when REDIS_URL is unset, migrates, loads the demo data
centre (idempotent) and, on the first start, its last week lived on a simulated clock
(`seed_history`: COMPOSER_DEMO_HISTORY_DAYS days, 0 leaves it out), then runs two Celery
workers (one for jobs on the default queue, a small one for beat's housekeeping on the
"housekeeping" queue, so that outbox sweeps and health polls never wait behind slow compose
jobs), Celery beat, the listener of the fabric
managers' pushed events (`manage.py fabric_events`), the Redfish lab (a small simulated
world of its own served as Redfish, for an operator to add as a manager:
composer/redfish_lab.py; COMPOSER_REDFISH_LAB=0 leaves it out) and the ASGI server (Daphne)
as child processes, and prints where the console and the lab are and who may log in once
they are ready: the console's /readyz answers 200 (database migrated, Redis, a live worker
for each queue and beat, the outbox moving), the lab serves its service root and both
workers answer a ping. Each child runs in its own process group; Ctrl-C or SIGTERM stops
them all and waits for them, so nothing is left running. A child that dies stops the rest.

Every child counts its Prometheus series into one folder (PROMETHEUS_MULTIPROC_DIR,
`var/prometheus`, emptied at each start unless the environment names one), so the web
server's /metrics adds up the workers' jobs and driver calls too (docs/monitoring.md).

The settings are `composer.settings.dev` unless DJANGO_SETTINGS_MODULE names others: DEBUG
off (COMPOSER_DEBUG=1 turns it on), static files served from their source folders. The
demo data centre is loaded by `seed_demo`, a command of the simulator's console: with
COMPOSER_SIMULATOR off there is no demo to run, and the launcher says so and stops.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from composer.demo_users import demo_logins
from composer.launcher_probes import HOST, console_ready, port_free, web_answers, workers_answer
from composer.redfish_lab import RedfishLab, lab_plan
from composer.settings.env import env_bool

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 300.0  # how long the web server and the worker may take to answer
log = logging.getLogger("composer.launcher")


class Launcher:
    """Owns the child processes and tears them down together."""

    def __init__(self) -> None:
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.stopping = False

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start a child in its own process group; refused once a stop was requested, so a
        Ctrl-C during start-up never leaves a process started after it."""
        if self.stopping:
            raise Interrupted(name)
        process = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True)
        self.children.append((name, process))
        log.info("started %s (pid %s)", name, process.pid)
        return process

    def request_stop(self, *_: object) -> None:
        """The signal handler: only note the request; the main loop tears down."""
        self.stopping = True

    def teardown(self) -> None:
        """Stop the children newest first (web, beat, worker, then Redis, which they use).

        Each gets SIGTERM to its whole process group and a grace period, then SIGKILL; the
        group is killed at the end in any case, so Celery's pool processes go with it.
        Safe to call more than once: each child is stopped once.
        """
        self.stopping = True
        if self.children:
            log.info("stopping %d processes", len(self.children))
        while self.children:
            name, process = self.children.pop()
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in time; killing it", name)
                _signal_group(process, signal.SIGKILL)
                process.wait()
            _signal_group(process, signal.SIGKILL)

    def exited(self) -> int | None:
        """The exit code of the first child that has exited (never 0), else None."""
        for name, process in self.children:
            code = process.poll()
            if code is not None:
                log.error("%s exited with code %s; stopping the console", name, code)
                return code or 1
        return None

    def wait_until_ready(
        self, *, port: str, broker_url: str, workers: list[str], lab: RedfishLab | None = None
    ) -> int | None:
        """Block until the console's /readyz answers 200, the Redfish lab (if any) its
        service root, and every worker a ping.

        Returns None when both do, else the exit code to stop with: a child's that exited,
        0 when a stop was requested, 1 when they did not answer within READY_TIMEOUT_S.
        """
        deadline = time.monotonic() + READY_TIMEOUT_S
        web_up = worker_up = False
        lab_up = lab is None
        not_ready = "the web server did not answer"
        while not self.stopping:
            code = self.exited()
            if code is not None:
                return code
            if not web_up:
                web_up, not_ready = console_ready(port)
            lab_up = lab_up or (lab is not None and web_answers(str(lab.port), "/redfish/v1/"))
            worker_up = worker_up or (web_up and workers_answer(broker_url, workers))
            if web_up and worker_up and lab_up:
                return None
            if time.monotonic() > deadline:
                waiting = (
                    f"the console was not ready ({not_ready})"
                    if not web_up
                    else ("the Redfish lab" if not lab_up else "the Celery workers")
                )
                log.error("%s did not answer within %.0f s", waiting, READY_TIMEOUT_S)
                return 1
            time.sleep(0.25)
        return 0

    def watch(self) -> int:
        """Block until a child exits or a stop is requested; return the exit code."""
        while not self.stopping:
            code = self.exited()
            if code is not None:
                return code
            time.sleep(0.5)
        return 0


class Interrupted(Exception):
    """A stop was requested while the console was still starting."""


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def console_url(port: str) -> str:
    """The console's address as the banner prints it (ALLOWED_HOSTS accepts its host)."""
    return f"http://{HOST}:{port}/"


def console_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of every process the launcher starts: the caller's, with the demo's
    settings module unless it names one."""
    env = dict(environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def prometheus_folder(env: dict[str, str], var_dir: Path) -> None:
    """Give every child one folder for its Prometheus series (multiprocess mode), emptied
    here: prometheus-client requires it empty when the processes start, or a previous run's
    counts would be added in. A folder the environment names is the operator's to empty."""
    if env.get("PROMETHEUS_MULTIPROC_DIR"):
        return
    folder = var_dir / "prometheus"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(folder)


def demo_credentials_keys(env: dict[str, str], var_dir: Path) -> None:
    """Give the demo a key for fabric managers' credentials when the environment names none.

    Kept in `var/credentials.key` (readable by its owner only), so credentials saved in one
    run still decrypt in the next. A deployment sets COMPOSER_CREDENTIALS_KEYS itself.
    """
    if env.get("COMPOSER_CREDENTIALS_KEYS", "").strip():
        return
    from cryptography.fernet import Fernet

    path = var_dir / "credentials.key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(Fernet.generate_key())
        log.info("made a key for fabric managers' credentials in %s", path)
    env["COMPOSER_CREDENTIALS_KEYS"] = path.read_text().strip()


def banner(port: str, password: str, lab: RedfishLab | None = None) -> str:
    """What the user reads once the console answers: where, who may log in, Composer's own
    Redfish service, the Redfish lab to add as a manager, how to stop."""
    url = console_url(port)
    return (
        f"\n  Composer is running at {url}\n"
        f"  Logins (password {password!r}): {demo_logins()}\n"
        + (lab.banner() if lab is not None else "")
        + f"  Redfish: {url}redfish/v1/ (the same logins; docs/redfish.md)\n"
        + f"  API docs: {url}api/docs/   Press Ctrl-C to stop.\n"
    )


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    env = console_environment(os.environ)
    if not env_bool("COMPOSER_SIMULATOR", True):
        log.error(
            "make run loads the demo data centre, which comes with the simulator's console: "
            "unset COMPOSER_SIMULATOR (or set it to 1) to run the demo"
        )
        return 1
    var_dir = Path(env.get("COMPOSER_VAR_DIR", ROOT / "var"))
    var_dir.mkdir(parents=True, exist_ok=True)
    prometheus_folder(env, var_dir)
    demo_credentials_keys(env, var_dir)
    port = env.get("PORT", "8000")
    launcher = Launcher()
    signal.signal(signal.SIGINT, launcher.request_stop)
    signal.signal(signal.SIGTERM, launcher.request_stop)
    if not port.isdigit() or not 0 < int(port) < 65536:
        log.error("PORT must be a port number; got %r", port)
        return 1
    history_days = env.get("COMPOSER_DEMO_HISTORY_DAYS", "7")
    if not history_days.isdigit() or int(history_days) > 60:
        log.error(
            "COMPOSER_DEMO_HISTORY_DAYS must be a number of days, 0 to 60; got %r", history_days
        )
        return 1
    minute_hours = env.get("COMPOSER_DEMO_HISTORY_MINUTE_HOURS", "24")
    if not minute_hours.isdigit() or int(minute_hours) > 24:
        log.error(
            "COMPOSER_DEMO_HISTORY_MINUTE_HOURS must be a number of hours, 0 to 24; got %r",
            minute_hours,
        )
        return 1
    if not port_free(port):
        log.error("port %s on %s is taken by another program; set PORT to a free one", port, HOST)
        return 1
    try:
        lab = lab_plan(env, host=HOST, avoid=int(port), is_free=lambda p: port_free(str(p)))
    except ValueError as exc:
        log.error("%s", exc)
        return 1
    try:
        if not env.get("REDIS_URL"):
            from composer.embedded import start_redis

            redis_process, url = start_redis(var_dir / "redis")
            launcher.children.append(("redis", redis_process))
            env["REDIS_URL"] = url
            log.info("embedded Redis at %s (pid %s)", url, redis_process.pid)
        _manage(env, "migrate", "--noinput")
        _manage(env, "seed_demo")
        if launcher.stopping:
            raise Interrupted("start-up")
        if int(history_days):
            # The first start lives the demo's last week (the charts, the calendar and the
            # counterfactual show it); later starts find it done and skip it at once.
            hours = str(min(int(minute_hours), 24 * int(history_days)))
            _manage(env, "seed_history", "--days", history_days, "--minute-hours", hours)
            if launcher.stopping:
                raise Interrupted("start-up")
        celery = [sys.executable, "-m", "celery", "-A", "composer"]
        # Named after this process, so that the readiness ping reaches these workers and no
        # others on the same Redis. Jobs (compose, decompose, heal, sync) on the default
        # queue; beat's housekeeping on its own queue and worker (docs/architecture.md).
        worker = f"composer-{os.getpid()}@{socket.gethostname()}"
        housekeeping = f"composer-housekeeping-{os.getpid()}@{socket.gethostname()}"
        launcher.spawn(
            "worker",
            [
                *celery,
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "--queues",
                "celery",
                "--hostname",
                worker,
            ],
            env,
        )
        launcher.spawn(
            "housekeeping",
            [
                *celery,
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "1",
                "--queues",
                "housekeeping",
                "--hostname",
                housekeeping,
            ],
            env,
        )
        launcher.spawn(
            "beat",
            [
                *celery,
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(var_dir / "celerybeat-schedule"),
            ],
            env,
        )
        launcher.spawn("events", [sys.executable, "manage.py", "fabric_events"], env)
        if lab is not None:
            launcher.spawn("redfish_lab", lab.argv(sys.executable), lab.environment(env))
        launcher.spawn(
            "web",
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                HOST,
                "-p",
                port,
                "composer.asgi:application",
            ],
            env,
        )
        log.info("waiting for the web server and the workers to answer")
        code = launcher.wait_until_ready(
            port=port, broker_url=env["REDIS_URL"], workers=[worker, housekeeping], lab=lab
        )
        if code is not None:
            return code
        sys.stderr.write(banner(port, env.get("COMPOSER_DEMO_PASSWORD", "demo"), lab))
        return launcher.watch()
    except Interrupted:
        log.info("interrupted while starting")
        return 0
    except (subprocess.CalledProcessError, OSError, RuntimeError) as exc:
        if launcher.stopping:
            log.info("interrupted while starting")
            return 0
        log.error("could not start the console: %s", exc)
        return 1
    finally:
        launcher.teardown()


if __name__ == "__main__":
    sys.exit(main())
