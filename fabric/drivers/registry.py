"""Which driver class serves which `FabricManager.driver` value.

Drivers are named by dotted path and imported on first use, so a vendor driver's client
library is only needed on machines whose managers use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.utils.module_loading import import_string

from fabric.credentials import decrypt
from fabric.drivers.base import Credentials, DriverError, FabricDriver
from fabric.drivers.metrics import driver_instrument

if TYPE_CHECKING:
    from fabric.models import FabricManager

DRIVERS: dict[str, str] = {
    "simulated": "fabric.simulator.driver.SimulatedDriver",
    "redfish": "fabric.drivers.redfish.driver.RedfishDriver",
}


def get_driver(manager: FabricManager, *, credentials: Credentials | None = None) -> FabricDriver:
    """Construct the driver for `manager` with its endpoint, settings and credentials.

    `credentials` replaces the stored ones (a connection test of values an operator has
    entered but not saved); by default the stored ones are decrypted.

    Raises a permanent DriverError for a driver name that is not registered (a
    configuration mistake that retrying cannot fix) or whose class cannot be imported.
    """
    path = DRIVERS.get(manager.driver)
    if path is None:
        raise DriverError(
            f"Fabric manager {manager.name!r} names unknown driver {manager.driver!r}; "
            f"one of {sorted(DRIVERS)}.",
            permanent=True,
        )
    try:
        driver_class: Any = import_string(path)
    except ImportError as exc:
        raise DriverError(
            f"Driver {manager.driver!r} cannot be loaded: {exc}", permanent=True
        ) from exc
    driver = driver_class(
        endpoint=manager.endpoint,
        settings=dict(manager.settings or {}),
        credentials=manager_credentials(manager) if credentials is None else credentials,
    )
    # Every call's latency and errors, per manager and operation (fabric.drivers.metrics).
    return cast(FabricDriver, driver_instrument(driver, manager=manager.name))


def manager_credentials(manager: FabricManager) -> Credentials:
    """The secrets `manager`'s driver signs in with, decrypted ({} when it has none).

    Raises a permanent DriverError naming the manager when they cannot be decrypted (no
    key, or not the key they were saved with): see `fabric.credentials.decrypt`.
    """
    return decrypt(manager)
