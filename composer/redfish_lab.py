"""The Redfish lab of `make run`: a small simulated world of its own (fabric "redfish-lab"),
served as a Redfish service beside the console, so that an operator can try "add a Redfish
manager" on the demo with nothing else. It is never added as a fabric manager by itself:
adding it (driver redfish, its address and account) is what the operator is there to try.

No Django here: the launcher plans the lab before Django is set up in its process. The
world is written and served by the simulator's own command, run as a child process
(`manage.py simulator_redfish --create`), so the product never imports the simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from composer.demo_users import DEMO_REDFISH_PASSWORD, DEMO_REDFISH_USERNAME
from composer.settings.env import env_bool

FABRIC = "redfish-lab"
FIRST_PORT = 8001
PORTS_TRIED = 20  # from FIRST_PORT on, when COMPOSER_REDFISH_LAB_PORT names none


@dataclass(frozen=True, slots=True)
class RedfishLab:
    """Where the lab listens and the account it signs in with."""

    host: str
    port: int
    username: str
    password: str

    @property
    def endpoint(self) -> str:
        """The address an operator enters as the manager's endpoint."""
        return f"http://{self.host}:{self.port}"

    def argv(self, python: str) -> list[str]:
        """The child process: write the lab's world unless it exists, then serve it."""
        return [
            python,
            "manage.py",
            "simulator_redfish",
            "--fabric",
            FABRIC,
            "--bind",
            self.host,
            "--port",
            str(self.port),
            "--create",
        ]

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The child's environment: the account passed as the settings name it (never on
        the command line, where `ps` would show the password)."""
        return {
            **env,
            "COMPOSER_SIMULATOR_REDFISH_USERNAME": self.username,
            "COMPOSER_SIMULATOR_REDFISH_PASSWORD": self.password,
        }

    def banner(self) -> str:
        """The banner's lines about the lab: where, which account, and what to do with it."""
        # The demo password is printed as the demo logins are; one the operator chose is
        # theirs to know, and never printed.
        shown = repr(self.password) if self.password == DEMO_REDFISH_PASSWORD else "(yours)"
        return (
            f"  Redfish lab (a small simulated fabric of its own, served as Redfish): "
            f"{self.endpoint}\n"
            f"    account {self.username!r} / {shown}; not added yet: add it under "
            f"Fabric > Fabric managers > Add, driver redfish.\n"
        )


def lab_plan(
    env: Mapping[str, str], *, host: str, avoid: int, is_free: Callable[[int], bool]
) -> RedfishLab | None:
    """The lab to start, or None when COMPOSER_REDFISH_LAB is off.

    Its port is COMPOSER_REDFISH_LAB_PORT, else the first free one from 8001 (never `avoid`,
    the console's). Raises ValueError, naming the variable, for a port that is not a number
    or is taken, or when none of the ports tried is free.
    """
    if not env_bool("COMPOSER_REDFISH_LAB", True, env):
        return None
    username = env.get("COMPOSER_SIMULATOR_REDFISH_USERNAME") or DEMO_REDFISH_USERNAME
    password = env.get("COMPOSER_SIMULATOR_REDFISH_PASSWORD") or DEMO_REDFISH_PASSWORD
    chosen = env.get("COMPOSER_REDFISH_LAB_PORT", "").strip()
    if chosen:
        if not chosen.isdigit() or not 0 < int(chosen) < 65536 or int(chosen) == avoid:
            raise ValueError(
                f"COMPOSER_REDFISH_LAB_PORT must be a port number other than the console's; "
                f"got {chosen!r}"
            )
        if not is_free(int(chosen)):
            raise ValueError(
                f"COMPOSER_REDFISH_LAB_PORT {chosen} is taken by another program; "
                "set it to a free port, or COMPOSER_REDFISH_LAB=0 to run without the lab"
            )
        return RedfishLab(host, int(chosen), username, password)
    for port in range(FIRST_PORT, FIRST_PORT + PORTS_TRIED):
        if port != avoid and is_free(port):
            return RedfishLab(host, port, username, password)
    raise ValueError(
        f"no free port for the Redfish lab from {FIRST_PORT} to {FIRST_PORT + PORTS_TRIED - 1}: "
        "set COMPOSER_REDFISH_LAB_PORT, or COMPOSER_REDFISH_LAB=0 to run without the lab"
    )
