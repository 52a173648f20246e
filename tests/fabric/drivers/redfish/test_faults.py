"""Faults over HTTP: what the driver raises, and what `bindings()` says afterwards."""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from fabric.drivers.base import DriverError, DriverTimeout
from fabric.drivers.redfish.driver import RedfishDriver
from tests.fabric.drivers.redfish.conftest import Served, driver_for, mockup
from tests.support.redfish_server import PASSWORD, USERNAME, serve

HOST = "/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock1"
GPU = "/redfish/v1/CompositionService/ResourceBlocks/OffloadBlock9/Processors/Block9GPU"


@pytest.mark.parametrize(
    ("status", "permanent", "words"),
    [(409, True, "in use or in conflict"), (412, True, "changed"), (503, False, "trying again")],
)
def test_an_http_refusal_is_permanent_or_transient_by_its_status(
    served: Served, status: int, permanent: bool, words: str
) -> None:
    with served("public-composability") as (service, url):
        driver = driver_for(url)
        driver.discover()
        service.fail_next("PATCH", status)
        with pytest.raises(DriverError) as caught:
            driver.bind(device_id=GPU, host_id=HOST)
        assert caught.value.permanent is permanent and words in caught.value.message
        assert [b for b in driver.bindings() if b.device_id == GPU] == []


def test_a_stale_etag_is_refused_permanently(served: Served) -> None:
    with served("public-composability") as (service, url):
        driver = driver_for(url)
        driver.discover()
        service.touch_before_next_write("/redfish/v1/Systems/ComposedSystem")
        with pytest.raises(DriverError) as caught:
            driver.bind(device_id=GPU, host_id=HOST)
        assert caught.value.permanent is True and "changed since it was read" in str(caught.value)
        assert [b for b in driver.bindings() if b.device_id == GPU] == []
        # Read afresh, the bind goes through.
        assert driver.bind(device_id=GPU, host_id=HOST).device_id == GPU


def test_a_slow_manager_times_out_transiently(served: Served) -> None:
    with served("public-composability") as (service, url):
        driver = driver_for(url, timeout_s=0.3)
        driver.discover()
        service.delay_s = 1.0
        with pytest.raises(DriverTimeout) as caught:
            driver.bindings()
        assert caught.value.permanent is False and "did not answer" in caught.value.message
        service.delay_s = 0


def test_a_session_refused_mid_way_signs_in_again(served: Served) -> None:
    with served("public-composability") as (service, url):
        driver = driver_for(url)
        driver.discover()
        assert service.logins() == 1
        driver_for(url).discover()
        assert service.logins() == 1, "one session per manager and process"
        service.expire_sessions()
        assert driver.bind(device_id=GPU, host_id=HOST).device_id == GPU
        assert service.logins() == 2


def test_a_202_is_followed_to_its_end_and_a_failed_task_is_permanent(served: Served) -> None:
    with served("public-composability") as (service, url):
        service.async_tasks = True
        service.task_polls = 2
        driver = driver_for(url)
        driver.discover()
        binding = driver.bind(device_id=GPU, host_id=HOST)
        assert binding in driver.bindings()
        assert any("TaskMonitors" in p for _m, p in service.log)
        driver.unbind(binding_id=binding.binding_id)
        service.fail_tasks = True
        with pytest.raises(DriverError) as caught:
            driver.bind(device_id=GPU, host_id=HOST)
        assert caught.value.permanent is True and "Exception" in caught.value.message
        assert [b for b in driver.bindings() if b.device_id == GPU] == []


@pytest.mark.parametrize("applied", [True, False])
def test_after_a_reset_during_a_patch_bindings_tell_whether_it_happened(
    served: Served, applied: bool
) -> None:
    with served("public-composability") as (service, url):
        driver = driver_for(url)
        driver.discover()
        service.reset_next("PATCH", applied=applied)
        with pytest.raises(DriverError) as caught:
            driver.bind(device_id=GPU, host_id=HOST)
        assert caught.value.permanent is False
        bound = [b for b in driver.bindings() if b.device_id == GPU]
        assert bool(bound) is applied
        # Retrying is safe either way: it returns the binding or makes it.
        assert driver.bind(device_id=GPU, host_id=HOST) in driver.bindings()


def test_an_unreachable_manager_is_a_transient_error_naming_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    driver = driver_for(f"http://127.0.0.1:{port}")
    with pytest.raises(DriverError) as caught:
        driver.probe()
    assert caught.value.permanent is False and "unreachable" in caught.value.message


def test_refused_credentials_are_permanent_and_never_logged(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with served("public-composability") as (_service, url):
        driver = RedfishDriver(
            endpoint=url, credentials={"username": USERNAME, "password": "wrong-pass"}
        )
        with pytest.raises(DriverError) as caught:
            driver.probe()
        assert caught.value.permanent is True
        assert "refused the stored credentials" in caught.value.message
        driver_for(url).probe()
    assert "wrong-pass" not in caplog.text and PASSWORD not in caplog.text
    assert "token-" not in caplog.text, "session tokens stay out of the logs"
    assert PASSWORD not in repr(driver_for(url))


def test_a_service_that_answers_garbage_is_not_redfish(served: Served) -> None:
    with served("public-composability") as (service, url):
        service.garbage_root = True
        with pytest.raises(DriverError) as caught:
            driver_for(url).probe()
    assert caught.value.permanent is True and "not as a Redfish service" in caught.value.message


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate to serve TLS with")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return str(cert), str(key)


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_is_verified_by_default_against_a_ca_bundle_or_turned_off(
    certificate: tuple[str, str],
) -> None:
    with serve(mockup("public-cxl"), tls=certificate) as (_service, url):
        with pytest.raises(DriverError) as caught:
            driver_for(url).probe()
        assert caught.value.permanent is True and "does not verify" in caught.value.message
        assert driver_for(url, ca_bundle=certificate[0]).probe().counts["switches"] == 1
        report = driver_for(url, verify_tls=False).probe()
        assert any("TLS verification is off" in n for n in report.notes)


def test_resources_that_are_not_valid_redfish_are_a_permanent_error(served: Served) -> None:
    with served("public-cxl") as (service, url):
        domain = "/redfish/v1/Chassis/PooledCXLType3/MemoryDomains/1"
        service.resources[domain]["MemorySizeMiB"] = "a lot"
        with pytest.raises(DriverError) as caught:
            driver_for(url).discover()
    assert caught.value.permanent is True
    assert "not valid Redfish" in caught.value.message
