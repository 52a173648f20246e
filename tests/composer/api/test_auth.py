"""Token auth: obtain with a password, use as `Authorization: Token <key>`, revoke; sessions too."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from composer.models import ApiToken
from composer.services.api_tokens import api_token_held, api_token_issue
from fabric.models import ChangeRecord
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

TOKEN_URL = "/api/v1/auth/token/"


def _obtain(api: APIClient, username: str, password: str) -> Any:
    return api.post(TOKEN_URL, {"username": username, "password": password}, format="json")


@pytest.mark.parametrize("persona", ["admin_user", "alice", "bob", "carol"])
def test_every_persona_obtains_a_token_and_uses_it(
    persona: str, password: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)
    response = _obtain(APIClient(), user.username, password)
    assert response.status_code == 200
    body = response.json()
    key = body["token"]
    assert len(key) == 40
    expected = {"id": ApiToken.objects.get(user=user).pk, "name": "", "expires_at": None}
    assert body == {**expected, "token": key}
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/pools/").status_code == 200


def test_only_the_keys_digest_is_stored(alice: Any, password: str, api: APIClient) -> None:
    key = _obtain(api, "alice", password).json()["token"]
    token = ApiToken.objects.get(user=alice)
    assert token.key_sha256 == hashlib.sha256(key.encode()).hexdigest()
    stored = ApiToken.objects.filter(pk=token.pk).values().get()
    assert key not in repr(stored)
    # The digest itself is no key.
    response = APIClient(HTTP_AUTHORIZATION=f"Token {token.key_sha256[:40]}").get("/api/v1/pools/")
    assert_error(response, 401, "authentication_failed")


def test_asking_twice_issues_two_tokens_that_both_work(
    alice: Any, password: str, api: APIClient
) -> None:
    first = _obtain(api, "alice", password).json()["token"]
    second = _obtain(api, "alice", password).json()["token"]
    assert first != second
    for key in (first, second):
        assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/").status_code == 200


def test_past_the_limit_the_least_recently_used_token_is_revoked(
    alice: Any, password: str, settings: Any
) -> None:
    settings.COMPOSER_API_TOKENS_PER_USER = 3
    keys = [_obtain(APIClient(), "alice", password).json()["token"] for _ in range(3)]
    # The first is used (long after the others were issued): the second is now the least
    # recently used, and goes when a fourth is issued.
    ApiToken.objects.filter(user=alice).update(last_used_at=timezone.now() - timedelta(hours=1))
    assert APIClient(HTTP_AUTHORIZATION=f"Token {keys[0]}").get("/api/v1/pools/").status_code == 200
    ApiToken.objects.filter(key_sha256=hashlib.sha256(keys[2].encode()).hexdigest()).update(
        last_used_at=timezone.now() - timedelta(minutes=30)
    )
    fourth = _obtain(APIClient(), "alice", password).json()["token"]
    assert ApiToken.objects.filter(user=alice).count() == 3
    works = {
        key: APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/").status_code == 200
        for key in [*keys, fourth]
    }
    assert works == {keys[0]: True, keys[1]: False, keys[2]: True, fourth: True}
    revoked = ChangeRecord.objects.filter(target_type="api_token", action="deleted").get()
    assert "least recently used of more than 3" in revoked.message


def test_a_form_encoded_request_works_too(alice: Any, password: str, api: APIClient) -> None:
    response = api.post(TOKEN_URL, {"username": "alice", "password": password})
    assert response.status_code == 200


def test_a_wrong_password_is_400_invalid_credentials(alice: Any, api: APIClient) -> None:
    body = assert_error(_obtain(api, "alice", "nope"), 400, "invalid_credentials")
    assert "username and password" in body["detail"]
    assert not ApiToken.objects.exists()


def test_an_unknown_user_is_the_same_400(api: APIClient, db: None) -> None:
    assert_error(_obtain(api, "mallory", "x"), 400, "invalid_credentials")


def test_an_inactive_user_gets_no_token(alice: Any, password: str, api: APIClient) -> None:
    alice.is_active = False
    alice.save()
    assert_error(_obtain(api, "alice", password), 400, "invalid_credentials")


@pytest.mark.parametrize(
    ("body", "field"),
    [({"username": "alice"}, "password"), ({"password": "x"}, "username"), ({}, "username")],
)
def test_missing_credentials_are_400_naming_the_field(
    body: dict[str, str], field: str, alice: Any, api: APIClient
) -> None:
    assert_error(api.post(TOKEN_URL, body, format="json"), 400, "invalid", field=field)


def test_a_malformed_json_body_is_400_parse_error(api: APIClient, db: None) -> None:
    response = api.post(TOKEN_URL, data="{nope", content_type="application/json")
    assert_error(response, 400, "parse_error")


def test_an_unsupported_media_type_is_415(api: APIClient, db: None) -> None:
    response = api.post(TOKEN_URL, data="<x/>", content_type="application/xml")
    assert_error(response, 415, "unsupported_media_type")


def test_deleting_revokes_the_callers_token(alice: Any, bob: Any, password: str) -> None:
    alice_key = _obtain(APIClient(), "alice", password).json()["token"]
    bob_key = _obtain(APIClient(), "bob", password).json()["token"]
    client = APIClient(HTTP_AUTHORIZATION=f"Token {alice_key}")
    assert client.delete(TOKEN_URL).status_code == 204
    assert_error(client.get("/api/v1/pools/"), 401, "authentication_failed")
    # Only the caller's own token goes.
    assert APIClient(HTTP_AUTHORIZATION=f"Token {bob_key}").get("/api/v1/pools/").status_code == 200
    # A new POST issues a new, different token.
    assert _obtain(APIClient(), "alice", password).json()["token"] != alice_key


def test_deleting_with_a_token_leaves_the_users_other_tokens(alice: Any, password: str) -> None:
    kept = _obtain(APIClient(), "alice", password).json()["token"]
    sent = _obtain(APIClient(), "alice", password).json()["token"]
    assert APIClient(HTTP_AUTHORIZATION=f"Token {sent}").delete(TOKEN_URL).status_code == 204
    assert APIClient(HTTP_AUTHORIZATION=f"Token {kept}").get("/api/v1/pools/").status_code == 200
    assert ApiToken.objects.filter(user=alice).count() == 1


def test_deleting_from_a_console_session_revokes_every_token(
    alice: Any, bob: Any, password: str
) -> None:
    for who in ("alice", "alice", "bob"):
        _obtain(APIClient(), who, password)
    console = Client()
    console.force_login(alice)  # a real session: request.user is a lazy object
    assert console.delete(TOKEN_URL).status_code == 204
    assert list(ApiToken.objects.values_list("user__username", flat=True)) == ["bob"]
    records = ChangeRecord.objects.filter(target_type="api_token", action="deleted")
    assert records.count() == 2


def test_deleting_needs_authentication(api: APIClient, db: None) -> None:
    assert_error(api.delete(TOKEN_URL), 401, "not_authenticated")


def test_deleting_without_a_token_is_harmless(api_as: Any, carol: Any) -> None:
    assert api_as(carol).delete(TOKEN_URL).status_code == 204


@pytest.mark.parametrize(
    "header",
    [
        "Token",
        "Token ",
        "Token a b",
        "Token 0000000000000000000000000000000000000000",
        "Token ünïcødé",
        "token keyword-in-lowercase-but-unknown-key",
        "Token nul\x00byte",
        "Token " + "a" * 5000,
        "Bearer x",
        "Basic YWxpY2U6eA==",
        "",
    ],
)
def test_malformed_or_unknown_tokens_are_401_json(header: str, alice: Any) -> None:
    response = APIClient(HTTP_AUTHORIZATION=header).get("/api/v1/devices/")
    assert response.status_code == 401
    body = response.json()
    assert body["code"] in {"authentication_failed", "not_authenticated"}
    assert body["detail"]
    assert response["WWW-Authenticate"] == "Token"


def test_a_missing_token_is_401_not_authenticated(api: APIClient, db: None) -> None:
    body = assert_error(api.get("/api/v1/jobs/"), 401, "not_authenticated")
    assert "credentials" in body["detail"].lower()


def test_a_session_authenticates_too(alice: Any) -> None:
    client = Client()
    client.force_login(alice)
    assert client.get("/api/v1/pools/").status_code == 200


def test_a_session_post_without_a_csrf_token_is_403(admin_user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.delete(TOKEN_URL)
    assert_error(response, 403, "permission_denied")


def test_password_guessing_is_throttled(alice: Any, api: APIClient) -> None:
    for _ in range(30):
        assert _obtain(api, "alice", "guess").status_code == 400
    response = _obtain(api, "alice", "guess")
    assert_error(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0


def test_issuing_and_revoking_a_token_is_audited_without_the_key(alice: Any, password: str) -> None:
    api = APIClient(REMOTE_ADDR="198.51.100.4")
    key = _obtain(api, "alice", password).json()["token"]
    token_id = ApiToken.objects.get(user=alice).pk
    APIClient(HTTP_AUTHORIZATION=f"Token {key}", REMOTE_ADDR="198.51.100.4").delete(TOKEN_URL)
    records = list(ChangeRecord.objects.filter(target_type="api_token").order_by("pk"))
    assert [r.action for r in records] == ["added", "deleted"]
    assert [r.message for r in records] == [
        f"API token {token_id} issued",
        f"API token {token_id} revoked",
    ]
    for record in records:
        assert (record.target_id, record.target_label) == (alice.pk, "API token of alice")
        assert (record.actor, record.source, record.remote_addr) == (alice, "api", "198.51.100.4")
        assert record.changes == {}
        assert key not in f"{record.target_label} {record.message}"


def test_a_token_is_marked_used_first_then_at_most_every_30_seconds(
    alice: Any, password: str
) -> None:
    key = _obtain(APIClient(), "alice", password).json()["token"]
    token = ApiToken.objects.get(user=alice)
    assert token.last_used_at is None  # never used
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    client.get("/api/v1/pools/")
    token = ApiToken.objects.get(pk=token.pk)
    assert token.last_used_at is not None  # its first use is written
    client.get("/api/v1/pools/")
    assert ApiToken.objects.get(pk=token.pk).last_used_at == token.last_used_at
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now() - timedelta(minutes=1))
    client.get("/api/v1/pools/")
    assert ApiToken.objects.get(pk=token.pk).last_used_at > token.last_used_at


def test_the_answer_with_a_key_is_never_cached(alice: Any, password: str, api: APIClient) -> None:
    assert _obtain(api, "alice", password)["Cache-Control"] == "no-store"


def test_an_inactive_users_token_is_401(alice: Any, password: str) -> None:
    key = _obtain(APIClient(), "alice", password).json()["token"]
    alice.is_active = False
    alice.save()
    response = APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/")
    assert_error(response, 401, "authentication_failed")


def test_no_key_reaches_the_logs(
    alice: Any, password: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        key = _obtain(APIClient(), "alice", password).json()["token"]
        client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
        client.get("/api/v1/pools/")
        client.delete(TOKEN_URL)
    assert "api token issued" in caplog.text and "api token revoked" in caplog.text
    assert key not in caplog.text and hashlib.sha256(key.encode()).hexdigest() not in caplog.text


def test_a_token_may_be_named_for_what_holds_it(alice: Any, password: str, api: APIClient) -> None:
    body = {"username": "alice", "password": password, "name": "nightly-report"}
    answer = api.post(TOKEN_URL, body, format="json").json()
    assert answer["name"] == "nightly-report"
    assert ApiToken.objects.get(pk=answer["id"]).name == "nightly-report"
    too_long = api.post(TOKEN_URL, {**body, "name": "n" * 101}, format="json")
    assert_error(too_long, 400, "invalid", field="name")
    not_text = api.post(TOKEN_URL, {**body, "name": 7}, format="json")
    assert_error(not_text, 400, "invalid", field="name")


def test_a_token_never_used_counts_as_used_when_issued(alice: Any, settings: Any) -> None:
    settings.COMPOSER_API_TOKENS_PER_USER = 2
    never = api_token_issue(user=alice, remote_addr=None).token
    used = api_token_issue(user=alice, remote_addr=None).token
    ApiToken.objects.filter(pk=never.pk).update(created_at=timezone.now() - timedelta(hours=2))
    ApiToken.objects.filter(pk=used.pk).update(last_used_at=timezone.now() - timedelta(hours=1))
    assert api_token_issue(user=alice, remote_addr=None).revoked == (never.pk,)
    # And a token last used three hours ago goes before one issued now and never used.
    ApiToken.objects.filter(pk=used.pk).update(
        created_at=timezone.now() - timedelta(hours=4),
        last_used_at=timezone.now() - timedelta(hours=3),
    )
    assert api_token_issue(user=alice, remote_addr=None).revoked == (used.pk,)


def test_a_token_may_be_given_a_lifetime(alice: Any, password: str, api: APIClient) -> None:
    body = {"username": "alice", "password": password, "expires_in_days": 30}
    before = timezone.now()
    answer = api.post(TOKEN_URL, body, format="json").json()
    expires_at = ApiToken.objects.get(pk=answer["id"]).expires_at
    assert expires_at is not None
    assert before + timedelta(days=30) <= expires_at <= timezone.now() + timedelta(days=30)
    assert answer["expires_at"] == expires_at.isoformat().replace("+00:00", "Z")
    never = api.post(TOKEN_URL, {**body, "expires_in_days": None}, format="json").json()
    assert never["expires_at"] is None


@pytest.mark.parametrize("days", [0, 3651, "30", True, 1.5])
def test_a_lifetime_out_of_range_or_not_an_integer_is_400(
    days: Any, alice: Any, password: str, api: APIClient
) -> None:
    body = {"username": "alice", "password": password, "expires_in_days": days}
    assert_error(api.post(TOKEN_URL, body, format="json"), 400, "invalid", field="expires_in_days")
    assert not ApiToken.objects.exists()


def test_an_expired_token_is_refused_then_deleted_at_the_next_issue(
    alice: Any, settings: Any
) -> None:
    settings.COMPOSER_API_TOKENS_PER_USER = 1
    issued = api_token_issue(user=alice, remote_addr=None, lifetime=timedelta(days=1))
    assert (
        APIClient(HTTP_AUTHORIZATION=f"Token {issued.key}").get("/api/v1/pools/").status_code == 200
    )
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now())
    response = APIClient(HTTP_AUTHORIZATION=f"Token {issued.key}").get("/api/v1/pools/")
    assert_error(response, 401, "authentication_failed")
    assert not api_token_held(issued.key, alice.pk)  # a live stream signed with it ends
    after = api_token_issue(user=alice, remote_addr=None)
    assert after.revoked == ()  # the expired one made room; no live token had to go
    assert list(ApiToken.objects.values_list("pk", flat=True)) == [after.token.pk]
    record = ChangeRecord.objects.get(target_type="api_token", action="deleted")
    assert record.message == f"API token {issued.token.pk} expired"


def test_a_new_token_is_never_the_one_the_limit_revokes(alice: Any, settings: Any) -> None:
    """Another token stamped just after the new one was made (a web server's clock ahead)
    still goes: the new one is not a candidate."""
    settings.COMPOSER_API_TOKENS_PER_USER = 1
    old = api_token_issue(user=alice, remote_addr=None).token
    ApiToken.objects.filter(pk=old.pk).update(last_used_at=timezone.now() + timedelta(minutes=1))
    new = api_token_issue(user=alice, remote_addr=None)
    assert new.revoked == (old.pk,)
    assert list(ApiToken.objects.values_list("pk", flat=True)) == [new.token.pk]
