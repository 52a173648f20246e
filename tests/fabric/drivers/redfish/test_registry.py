"""The Redfish driver is registered as "redfish" and built without touching the network."""

from __future__ import annotations

import pytest

from fabric.drivers.base import DriverError, FabricDriver
from fabric.drivers.redfish.driver import RedfishDriver
from fabric.drivers.registry import get_driver
from fabric.models import FabricManager


def test_a_redfish_manager_gets_the_redfish_driver_and_nothing_is_opened() -> None:
    manager = FabricManager(
        name="fm", driver="redfish", endpoint="https://192.0.2.1", settings={"timeout_s": 3}
    )
    manager.clean()
    driver = get_driver(manager)
    assert isinstance(driver, RedfishDriver) and isinstance(driver, FabricDriver)
    assert driver.endpoint == "https://192.0.2.1"


@pytest.mark.parametrize(
    ("endpoint", "settings", "words"),
    [
        ("https://fm", {"composition_method": "magic"}, "composition_method"),
        ("fm.example.net", {}, "not an http(s) URL"),
        ("https://fm", {"timeout_s": "soon"}, "timeout_s"),
        ("https://fm", {"verify_tls": "no"}, "verify_tls"),
    ],
)
def test_bad_settings_are_refused_permanently_naming_the_setting(
    endpoint: str, settings: dict[str, object], words: str
) -> None:
    with pytest.raises(DriverError) as caught:
        RedfishDriver(endpoint=endpoint, settings=settings, credentials={}).probe()
    assert caught.value.permanent is True and words in caught.value.message
