"""The demo's tenants and logins, in a module that needs no Django set-up.

`seed_demo` creates them (fabric.simulator.console.demo) and `make run` prints them
(composer.launcher) before Django is configured in its process: both read this one list,
so the banner, the seed's report and the README name the same logins.
"""

from __future__ import annotations

from dataclasses import dataclass

from composer.choices import Role

DEMO_TENANTS: tuple[tuple[str, str], ...] = (("Acme", "acme"), ("Globex", "globex"))


@dataclass(frozen=True, slots=True)
class DemoUser:
    """A demo login: operators are staff and superuser; the others belong to one tenant."""

    username: str
    first_name: str
    email: str
    is_operator: bool = False
    tenant_slug: str | None = None
    role: str | None = None

    @property
    def description(self) -> str:
        """Who the login is, as the banner shows it: `bob (Acme, read-only)`."""
        if self.is_operator:
            return f"{self.username} (operator)"
        tenant = next(name for name, slug in DEMO_TENANTS if slug == self.tenant_slug)
        role = Role(self.role).label.lower() if self.role else "no role"
        return f"{self.username} ({tenant}, {role})"


DEMO_USERS: tuple[DemoUser, ...] = (
    DemoUser("admin", "Ada", "admin@composer.example", is_operator=True),
    DemoUser("alice", "Alice", "alice@acme.example", tenant_slug="acme", role=Role.ADMIN),
    DemoUser("bob", "Bob", "bob@acme.example", tenant_slug="acme", role=Role.READONLY),
    DemoUser("carol", "Carol", "carol@globex.example", tenant_slug="globex", role=Role.MEMBER),
)


def demo_logins() -> str:
    """Every demo login with its role, for the launcher's banner and the seed's report."""
    return ", ".join(user.description for user in DEMO_USERS)


# The account of the simulated world served as Redfish when the settings name none
# (COMPOSER_SIMULATOR_REDFISH_USERNAME / _PASSWORD): `make run` prints it beside the Redfish
# lab's address and passes it to the lab in those variables. The simulator keeps its own
# copy (it imports no composer); tests/fabric/simulator checks that they agree.
DEMO_REDFISH_USERNAME = "operator"
DEMO_REDFISH_PASSWORD = "simulator"
