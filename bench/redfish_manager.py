"""A Redfish fabric manager for the simulated world served as Redfish, added the way an
operator adds one (`manager_create`: endpoint checked, credentials stored encrypted).

Shared by bench_e2e (compose through the Redfish driver) and bench_redfish (discovery and
sync). Import it after `django.setup()`.
"""

from __future__ import annotations

from fabric.models import FabricManager
from fabric.services.managers.input import CredentialsInput, ManagerInput
from fabric.services.managers.write import manager_create
from fabric.simulator.redfish.auth import credentials

# Each call's limit: a collection of thousands of members expanded in one answer takes
# seconds to serve on a busy machine, far more than one resource.
TIMEOUT_S = 120


def redfish_manager(name: str, endpoint: str, *, use_expand: bool = True) -> FabricManager:
    """Add manager `name` reading the Redfish service at `endpoint` with the simulated
    service's account; `use_expand` false never sends `$expand` (docs/drivers.md)."""
    account = credentials()
    settings: dict[str, object] = {"timeout_s": TIMEOUT_S}
    if not use_expand:
        settings["use_expand"] = False
    return manager_create(
        data=ManagerInput(name=name, driver="redfish", endpoint=endpoint, settings=settings),
        credentials=CredentialsInput(username=account["username"], password=account["password"]),
        source="benchmark",
    )
