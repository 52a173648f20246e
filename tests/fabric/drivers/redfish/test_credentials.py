"""Credentials over HTTP: a stored token, refused credentials' messages, the bounded
session cache."""

from __future__ import annotations

import logging

import pytest

from fabric.drivers.base import DriverError
from fabric.drivers.redfish import sessions
from fabric.drivers.redfish.driver import RedfishDriver
from tests.fabric.drivers.redfish.conftest import Served, driver_for
from tests.support.redfish_server import PASSWORD, USERNAME

GPU = "/redfish/v1/CompositionService/ResourceBlocks/OffloadBlock9/Processors/Block9GPU"


def test_a_stored_token_is_sent_without_a_login_and_its_refusal_is_permanent(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with served("public-composability") as (service, url):
        token = service.issue_token()
        driver = RedfishDriver(endpoint=url, credentials={"token": token})
        assert any(d.external_id == GPU for d in driver.discover().devices)
        assert service.logins() == 0, "a stored token is not a login"
        other = service.issue_token()
        RedfishDriver(endpoint=url, credentials={"token": other}).discover()
        assert service.logins() == 0
        service.expire_sessions()
        with pytest.raises(DriverError) as caught:
            RedfishDriver(endpoint=url, credentials={"token": token}).discover()
        assert caught.value.permanent is True
        assert "refused the stored token" in caught.value.message
        assert token not in caught.value.message
        assert service.logins() == 0, "no login is tried behind a refused token"
    assert token not in caplog.text and other not in caplog.text


class _Forgetful(set[str]):
    """A service that issues sessions it then does not accept."""

    def add(self, element: str) -> None:
        pass


def test_refused_credentials_name_the_manager_but_no_credential(served: Served) -> None:
    with served("public-composability") as (service, url):
        messages = []
        with pytest.raises(DriverError) as caught:  # refused at the login
            RedfishDriver(
                endpoint=url, credentials={"username": USERNAME, "password": "wrong-pass"}
            ).probe()
        messages.append(caught.value)
        driver = driver_for(url)
        driver.discover()
        service.tokens = _Forgetful()  # refused mid-session, and again after signing in
        with pytest.raises(DriverError) as caught:
            driver.bindings()
        messages.append(caught.value)
    for error in messages:
        assert error.permanent is True
        assert url in error.message and "refused the stored credentials" in error.message
        assert USERNAME not in error.message and "wrong-pass" not in error.message
        assert PASSWORD not in error.message


def test_the_session_cache_evicts_the_least_recently_used_and_signs_it_out(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "MAX_SESSIONS", 2)
    with served("public-composability") as (service, url):
        first, second, third = (driver_for(url, timeout_s=t) for t in (5, 6, 7))
        first.probe()
        second.probe()
        first.probe()  # now the most recently used: `second` is the one to go
        assert service.logins() == 2
        third.probe()
        assert len(sessions._SESSIONS) == 2
        assert ("DELETE", service.sessions_path() + "/token-2") in service.log
        first.probe()
        assert service.logins() == 3, "the kept sessions are reused"
        second.probe()
        assert service.logins() == 4, "the evicted one signs in afresh"
