"""Benchmark of reliability: kills, outages and driver faults under load (issue #11, 4).

Run from the repository root with the project's virtual environment, on PostgreSQL:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chaos .venv/bin/python bench/bench_chaos.py
    ... bench/bench_chaos.py --kills 5 --quiet 65 --no-write        # a short look

It creates a throwaway database (the `test_` twin of DATABASE_URL's), seeds a simulated
data centre through the real path (`demo_seed`) with slow binds, and starts the production
layout on this machine under a supervisor (bench/chaos/layout.py): a Redis of its own,
daphne (`composer.asgi`), Celery workers (prefork), beat, and a `housekeeping` worker when
the settings route tasks to that queue. Then, at once:

- the load (bench/chaos/load.py): compose, heal and decompose bursts through the HTTP API
  with a tenant member's token, GPU failures through the simulator's fault API, bind
  timeouts and transient unbind failures injected into the simulated manager;
- websocket clients (bench/chaos/ws_clients.py) that record every event and reconnect and
  resume when their connection drops;
- the disruptions (bench/chaos/kills.py), each at a random moment while compositions are
  mid-step: kill -9 of a worker's main process, of a pool child, of the web process, a Redis
  restart, every database connection terminated; until `--kills` process kills are made.

After a quiet period (`--quiet`, longer than the 60 s a composition may stay transitional)
it measures from outside (bench/chaos/measure.py): recovery time after each disruption,
compositions stuck beyond 60 s, orphan bindings, double allocations, events lost; and
writes the section of docs/reliability.md (bench/chaos/report.py). Target: 0 stuck, 0
orphans, 0 doubles, 0 lost over at least 50 kills; the script exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from bench.chaos import measure  # noqa: E402
from bench.chaos.kills import Chaos  # noqa: E402
from bench.chaos.layout import Layout, housekeeping_routed  # noqa: E402
from bench.chaos.load import Api, Load, db_retry  # noqa: E402
from bench.chaos.report import Outcome, render  # noqa: E402
from bench.common import machine, write_section  # noqa: E402
from bench.processes import database_url  # noqa: E402
from composer.choices import Role  # noqa: E402
from composer.models import Composition, Event, Membership, Tenant  # noqa: E402
from composer.services.api_tokens import api_token_issue  # noqa: E402
from fabric.simulator import store  # noqa: E402
from fabric.simulator.console.demo import demo_seed  # noqa: E402
from fabric.simulator.spec import WorldSpec  # noqa: E402

NAME = "chaos"  # the fabric manager's, the simulated fabric's and the tenant's name
REPORT = ROOT / "docs" / "reliability.md"
log = sys.stderr.write


def seed(args: argparse.Namespace) -> tuple[str, str, int]:
    """The data centre with slow binds; a member's and an operator's API tokens, the tenant."""
    result = demo_seed(
        spec=WorldSpec.for_device_count(args.devices),
        manager_name=NAME,
        fabric_name=NAME,
        users=False,
    )
    fabric = store.fabric_get(NAME)
    store.latency_set(fabric=fabric, operation="bind", ms=args.bind_ms)
    store.latency_set(fabric=fabric, operation="unbind", ms=args.unbind_ms)
    log(f"seeded: {result.sync.summary() if result.sync else 'no sync'}\n")
    tenant = Tenant.objects.create(name="Chaos", slug=NAME)
    users = get_user_model().objects
    member = users.create_user("chaos-member", password="bench-only")
    Membership.objects.create(user=member, tenant=tenant, role=Role.MEMBER)
    operator = users.create_user(
        "chaos-operator", password="bench-only", is_staff=True, is_superuser=True
    )
    member_key = api_token_issue(user=member, remote_addr=None).key
    return member_key, api_token_issue(user=operator, remote_addr=None).key, tenant.pk


def start_clients(ports: list[int], count: int, token: str, folder: Path) -> subprocess.Popen[str]:
    urls = ",".join(f"ws://127.0.0.1:{port}/ws/events/" for port in ports)
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.chaos.ws_clients", "--urls", urls, "--clients",
         str(count), "--token", token],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=(folder / "ws_clients.log").open("w"), text=True, start_new_session=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("READY"):
        process.kill()
        raise RuntimeError(f"websocket clients did not start: {line!r}")
    return process


def run(args: argparse.Namespace, folder: Path) -> Outcome:
    """Seed, start everything, disrupt until enough kills, wait, measure, stop."""
    member_token, operator_token, tenant_id = seed(args)
    info = machine()
    housekeeping = args.housekeeping == "yes" or (
        args.housekeeping == "auto"
        and housekeeping_routed(getattr(settings, "CELERY_TASK_ROUTES", None))
    )
    layout = Layout(
        folder=folder,
        database=database_url(connection.settings_dict),
        web=args.web,
        workers=args.workers,
        concurrency=args.concurrency,
        housekeeping=housekeeping,
        env={"COMPOSER_SIMULATOR_LATENCY_SCALE": "1", "COMPOSER_EVENTS_CHANNEL_PREFIX": NAME},
    )
    described = (
        f"{args.web} daphne, {args.workers} Celery workers of {args.concurrency} processes"
        + (", a housekeeping worker (`-Q housekeeping`)" if housekeeping else "")
        + ", beat, a Redis of its own, PostgreSQL"
    )
    connection.close()
    clients: subprocess.Popen[str] | None = None
    started = time.time()
    try:
        layout.start()
        log(f"layout up: {described}\n")
        clients = start_clients(layout.web_ports, args.clients, member_token, folder)
        member = Api(layout.web_ports, member_token)
        operator = Api(layout.web_ports, operator_token)
        sampler = measure.Sampler(NAME)
        load = Load(
            member=member, operator=operator, manager=NAME, fabric=NAME,
            burst=args.burst, keep=args.keep, seed=args.seed,
        )  # fmt: skip
        chaos = Chaos(layout, kills=args.kills, interval_s=args.interval, seed=args.seed)
        sampler.start()
        load.start()
        chaos.start()
        while chaos.is_alive():
            chaos.join(timeout=10)
            log(f"  {len(chaos.done)} disruptions, {chaos.kill_count()} kills\n")
            if not load.is_alive():
                chaos.stopping.set()
        load.stopping.set()
        load.join()
        log(f"quiet period of {args.quiet:.0f} s\n")
        time.sleep(args.quiet)
        sampler.stopping.set()
        sampler.join()
        end = time.time()
        cutoff = db_retry(lambda: Event.objects.order_by("-pk").values_list("pk", flat=True)[0])
        assert clients.stdin is not None and clients.stdout is not None
        clients.stdin.write("DONE\n")
        clients.stdin.flush()
        line = clients.stdout.readline()
        (folder / "ws_clients.json").write_text(line)
        received = json.loads(line)
        lines = db_retry(lambda: measure.timelines(started))
        stuck = measure.stuck(lines, end)
        account = db_retry(lambda: measure.diagnosis(chaos.done, lines, stuck))
        (folder / "diagnosis.txt").write_text(account)
        orphans, missing = db_retry(lambda: measure.fabric_agreement(NAME))
        doubles = sampler.doubles | set(db_retry(lambda: measure.doubles_now(NAME)))
        states = Counter(
            Composition.objects.filter(name__startswith="chaos-").values_list("state", flat=True)
        )
        return Outcome(
            args=args,
            info=info,
            layout=described,
            duration_s=end - started,
            recoveries=measure.recoveries(chaos.done, lines, end),
            stuck=stuck,
            orphans=orphans,
            missing=missing,
            doubles=sorted(doubles),
            lost=measure.events_lost(received, tenant_id, cutoff),
            clients=received,
            load=dict(load.counts),
            answers=dict(member.answers),
            compositions=len(lines),
            healed=sum(any(to == "healing" for _, to in line) for line in lines.values()),
            final_states=dict(states),
            refusals=load.refusals,
            errors=[*chaos.errors, *load.errors, *sampler.errors],
        )
    finally:
        if clients is not None and clients.poll() is None:
            clients.kill()
            clients.wait()
        layout.stop()
        connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50, help="process kills to make")
    parser.add_argument("--interval", type=float, default=9.0, help="seconds between disruptions")
    parser.add_argument("--quiet", type=float, default=90.0, help="calm before measuring (s)")
    parser.add_argument("--burst", type=int, default=8, help="composes per burst")
    parser.add_argument("--keep", type=int, default=16, help="compositions kept composed")
    parser.add_argument("--web", type=int, default=1, help="daphne processes")
    parser.add_argument("--workers", type=int, default=2, help="Celery workers")
    parser.add_argument("--concurrency", type=int, default=2, help="processes per worker")
    parser.add_argument(
        "--housekeeping", choices=("auto", "yes", "no"), default="auto",
        help="a worker for the housekeeping queue (auto: when CELERY_TASK_ROUTES use it)",
    )  # fmt: skip
    parser.add_argument("--bind-ms", type=int, default=3000, help="simulated bind time")
    parser.add_argument("--unbind-ms", type=int, default=1500, help="simulated unbind time")
    parser.add_argument("--devices", type=int, default=800, help="world size")
    parser.add_argument("--clients", type=int, default=4, help="websocket clients")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--logs", type=Path, default=None, help="keep the processes' logs here")
    parser.add_argument("--no-write", action="store_true", help="print, do not update the docs")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="No directory at")
    if connection.vendor != "postgresql":
        log("bench_chaos skipped: it needs PostgreSQL (DATABASE_URL): it terminates connections.\n")
        return 0

    Path(settings.BENCH_DIR).mkdir(parents=True, exist_ok=True)
    folder = args.logs or Path(tempfile.mkdtemp(prefix="bench-chaos-"))
    folder.mkdir(parents=True, exist_ok=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        outcome = run(args, folder)
    finally:
        teardown_databases(old_config, verbosity=0)
        if not args.logs:
            shutil.rmtree(folder, ignore_errors=True)
    section = render(outcome)
    if args.no_write:
        sys.stdout.write(section + "\n")
    else:
        write_section("chaos", section, document=REPORT)
        log(f"wrote {REPORT.relative_to(ROOT)}\n")
    log(section + "\n")
    return 0 if all(outcome.verdict().values()) else 1


if __name__ == "__main__":
    sys.exit(main())
