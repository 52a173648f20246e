"""What a careless or hostile client sends the Redfish service: answered in the Redfish
error shape, never a 500, and password guessing slowed."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client, override_settings
from django.utils import timezone

from composer.models import RedfishSession
from composer.redfish import guard
from fabric.models import ChangeRecord
from tests.factories.composer import PASSWORD

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"
SESSIONS = f"{V1}/SessionService/Sessions"


@pytest.fixture(autouse=True)
def _fresh_limits() -> None:
    """The test client's address starts with no wrong passwords counted (only its key:
    the cache's Redis database is shared with the rest of the run)."""
    cache.delete(guard.failures_key("127.0.0.1"))


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_control_characters_in_credentials_are_a_wrong_password_not_a_500(alice: Any) -> None:
    client = Client()
    answer = client.get(f"{V1}/Registries", HTTP_AUTHORIZATION=_basic("al\x00ice", PASSWORD))
    assert answer.status_code == 401
    login = client.post(
        SESSIONS, {"UserName": "al\x00ice", "Password": PASSWORD}, content_type="application/json"
    )
    assert login.status_code == 401
    assert login.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith("NoValidSession")


def test_a_body_past_the_limit_is_413_and_odd_methods_405(alice: Any, redfish_as: Any) -> None:
    client = Client()
    huge = '{"UserName": "' + "a" * (2 * 1024 * 1024) + '"}'
    assert client.post(SESSIONS, huge, content_type="application/json").status_code == 413
    session = redfish_as(alice)
    for method in ("PATTERN", "WRITER", "PUT", "OPTIONS"):
        answer = session.client.generic(
            method, f"{V1}/SessionService", headers={"X-Auth-Token": session.token}
        )
        assert answer.status_code == 405, method
        assert "GET" in answer["Allow"]


def test_digits_that_are_not_ascii_are_refused_not_read(alice: Any, redfish_as: Any) -> None:
    session = redfish_as(alice)
    assert session.get(f"{V1}/Registries?$top=²").status_code == 400
    assert session.get(f"{V1}/AccountService/Accounts/²").status_code == 404


def test_a_password_change_ends_the_users_sessions(alice: Any, redfish_as: Any) -> None:
    session = redfish_as(alice)
    assert session.get(f"{V1}/SessionService").status_code == 200
    alice.set_password("another-long-password")
    alice.save()
    assert session.get(f"{V1}/SessionService").status_code == 401


def test_lapsed_sessions_are_not_listed_and_end_audited(
    alice: Any, admin_user: Any, redfish_as: Any
) -> None:
    old = redfish_as(alice)
    RedfishSession.objects.update(last_used_at=timezone.now() - timedelta(hours=2))
    assert old.get(f"{V1}/SessionService").status_code == 401
    admin = redfish_as(admin_user)  # a login ends the lapsed ones
    members = admin.get(SESSIONS).json()["Members"]
    assert len(members) == 1
    assert RedfishSession.objects.filter(user=alice).count() == 0
    assert ChangeRecord.objects.filter(source="redfish", message__contains="unused").count() == 1


@override_settings(COMPOSER_REDFISH_AUTH_FAILURES=3)
def test_wrong_passwords_from_one_address_are_limited(alice: Any) -> None:
    client = Client()
    for _ in range(3):
        wrong = client.get(f"{V1}/Registries", HTTP_AUTHORIZATION=_basic("alice", "guess"))
        assert wrong.status_code == 401
    limited = client.post(
        SESSIONS, {"UserName": "alice", "Password": PASSWORD}, content_type="application/json"
    )
    assert limited.status_code == 429
    assert limited["Retry-After"] == "60"


def test_etags_of_queried_reads_match_and_a_star_is_304(alice: Any, redfish_as: Any) -> None:
    session = redfish_as(alice)
    mine = session.get(SESSIONS).json()["Members"][0]["@odata.id"]
    tag = session.get(f"{mine}?$expand=.")["ETag"]
    assert session.get(mine)["ETag"] == tag
    assert session.get(mine, If_None_Match="*").status_code == 304
    assert session.delete(mine, If_Match='W/"stale"').status_code == 412
    assert session.delete(mine, If_Match=tag).status_code == 204
