"""`make fuzz`: schemathesis against every operation of /api/schema/, as an operator and as
a tenant member, on Daphne and the database CI names (PostgreSQL there).

A database of its own (`fuzz_<name>` on PostgreSQL, var/fuzz.sqlite3 on SQLite) gets the
demo data centre and its users; Daphne serves it with the test settings (tasks run at
once, no simulated latency); schemathesis runs the checks of tests/fuzz/schemathesis.toml,
first with admin's token, then with alice's. Any 5xx, any response that breaks the schema,
any schema-violating request accepted fails the run. The database is dropped afterwards.

Bounded: FUZZ_MAX_EXAMPLES cases per operation (default 10), FUZZ_WORKERS at once
(default 1: schemathesis's worker threads can trip over CPython 3.11's AST compiler, an
error of the tool rather than of the API), seed FUZZ_SEED (fixed by default, so CI repeats
itself; set another to explore). Reports go to var/fuzz/.

    python -m tests.fuzz.api            # what `make fuzz` runs
    python -m tests.fuzz.api --include-path-regex webhooks   # more schemathesis arguments
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFIG = Path(__file__).with_name("schemathesis.toml")
IDENTITIES = ("admin", "alice")  # an operator, a tenant member (Acme)


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.test")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from composer.services.api_tokens import api_token_issue
    from tests.support.daphne import daphne_running

    reports = Path(settings.VAR_DIR) / "fuzz"
    reports.mkdir(parents=True, exist_ok=True)
    test = connection.settings_dict.setdefault("TEST", {})
    if connection.vendor == "sqlite":
        test["NAME"] = str(Path(settings.VAR_DIR) / "fuzz.sqlite3")
    else:
        test["NAME"] = f"fuzz_{connection.settings_dict['NAME']}"
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        call_command("seed_demo", verbosity=0)
        users = get_user_model().objects
        tokens = {
            who: api_token_issue(user=users.get(username=who), remote_addr=None).key
            for who in IDENTITIES
        }
        database = dict(connection.settings_dict)
        connection.close()
        failed = []
        with daphne_running(database, log_path=reports / "daphne.log") as port:
            for who in IDENTITIES:
                if _schemathesis(port, who, tokens[who], reports) != 0:
                    failed.append(who)
        if failed:
            sys.stderr.write(f"\nfuzz: failures as {', '.join(failed)} (see above, var/fuzz/)\n")
            return 1
        sys.stderr.write("\nfuzz: no failures as an operator or as a tenant member\n")
        return 0
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def _schemathesis(port: int, who: str, token: str, reports: Path) -> int:
    """One schemathesis run as `who`; its exit status."""
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or "st"
    argv = [
        st,
        "--config-file",
        str(CONFIG),
        "run",
        f"http://127.0.0.1:{port}/api/schema/",
        "--max-examples",
        os.environ.get("FUZZ_MAX_EXAMPLES", "10"),
        "--workers",
        os.environ.get("FUZZ_WORKERS", "1"),
        "--seed",
        os.environ.get("FUZZ_SEED", "20261201"),
        "--report",
        "junit",
        "--report-junit-path",
        str(reports / f"{who}.xml"),
        *sys.argv[1:],  # e.g. --include-path-regex, to fuzz some operations only
    ]
    sys.stderr.write(f"\nfuzz: schemathesis as {who}\n")
    sys.stderr.flush()
    # In var/fuzz/: what schemathesis and Hypothesis keep on disk stays out of the checkout.
    return subprocess.call(argv, cwd=reports, env={**os.environ, "FUZZ_TOKEN": token})


if __name__ == "__main__":
    sys.exit(main())
