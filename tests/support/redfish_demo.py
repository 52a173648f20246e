"""The demo data centre served over real HTTP, for the Redfish conformance tests.

What `make run` shows a Redfish tool: `seed_demo` (the simulated demo fabric, its manager,
pools, the demo tenants and logins of composer/demo_users.py), one composition of each
tenant and one of Acme's on a share of a GPU (so that composed systems, a shared GPU, their
tasks and their events are in the tree), served
by Daphne, the production ASGI server, in a process of its own on the tests' database.

`demo_served(blocker, log_dir)` is behind the module-scoped `demo_redfish` fixture: DMTF's
validators are slow, so each test module runs each once against one service. The database
is flushed afterwards, as a transactional test leaves it. The tests that use it are marked
`django_db` (plain: the seeded demo is committed before they start, and they read it over
HTTP only), so that pytest-django creates the tests' database for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.db import connection

from composer.demo_users import DEMO_USERS
from tests.support.daphne import daphne_running

OPERATOR = next(user.username for user in DEMO_USERS if user.is_operator)
# A tenant admin (may compose) and a member of the other tenant, as the demo names them.
TENANT = "alice"
OTHER_TENANT = "carol"


@dataclass(frozen=True)
class DemoService:
    """Where the demo's Redfish service answers, and the demo logins' password."""

    url: str
    password: str
    composed: dict[str, str]  # username -> the name of the composition composed for them

    @property
    def users(self) -> list[str]:
        return [user.username for user in DEMO_USERS]


def _compose_for_each_tenant() -> dict[str, str]:
    """A small composition of Acme's (by alice) and one of Globex's (by carol); Acme's
    second holds a share of a GPU."""
    from django.contrib.auth import get_user_model

    from composer.models import Membership
    from tests.support.compose import composed

    names = {}
    for username in (TENANT, OTHER_TENANT):
        user = get_user_model().objects.get(username=username)
        tenant = Membership.objects.filter(user=user).select_related("tenant").first().tenant
        name = f"{username}-dev"
        composed(tenant=tenant, user=user, name=name, spec={"items": [{"kind": "gpu", "count": 1}]})
        names[username] = name
        if username == TENANT:  # and a system on a share of a GPU (its Oem.Composer)
            spec = {"items": [{"kind": "gpu", "share": 250}], "cores": 4}
            composed(tenant=tenant, user=user, name=f"{username}-notebook", spec=spec)
    return names


@contextmanager
def demo_served(blocker: Any, log_dir: Path) -> Iterator[DemoService]:
    """Seed the demo into the tests' database, serve it, flush it afterwards."""
    with blocker.unblock():
        # The tests' own database only (never the one DATABASE_URL names): it is flushed.
        assert "test" in Path(str(connection.settings_dict["NAME"])).name, (
            "the demo is served from the tests' database: mark the module's tests django_db"
        )
        # Committed, so that the server sees it: never inside a test's transaction (a
        # module-scoped fixture asked for with request.getfixturevalue would be).
        assert not connection.in_atomic_block, "take demo_redfish as a fixture argument"
        call_command("seed_demo", verbosity=0)
        composed = _compose_for_each_tenant()
        database = dict(connection.settings_dict)
        connection.close()
    try:
        with daphne_running(database, log_path=log_dir / "daphne.log") as port:
            yield DemoService(
                url=f"http://127.0.0.1:{port}",
                password=settings.COMPOSER_DEMO_PASSWORD,
                composed=composed,
            )
    finally:
        with blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)
