"""The *API tokens* pages: a user's own tokens, a new one (password again, shown once),
revocations."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from composer.models import ApiToken
from composer.services.api_tokens import api_token_issue
from fabric.models import ChangeRecord
from tests.factories.composer import PASSWORD

pytestmark = pytest.mark.django_db

PAGE = reverse("composer:api_tokens")
NEW = reverse("composer:api_token_create")
ALL = reverse("composer:api_token_revoke_all")


@pytest.fixture(autouse=True)
def _no_wrong_passwords_counted() -> Iterator[None]:
    """Wrong passwords are counted in the cache; each test starts with none."""
    cache.clear()
    yield
    cache.clear()


def _rows(response: Any) -> list[int]:
    return [token.pk for token in response.context["tokens"]]


def _works(key: str) -> bool:
    return APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/").status_code == 200


def _nonce(console: Client) -> str:
    found = re.search(r'name="nonce" value="([^"]+)"', console.get(NEW).content.decode())
    assert found
    return found.group(1)


def _make(console: Client, name: str = "", **extra: Any) -> Any:
    body = {"name": name, "password": PASSWORD, "expires": "90", "nonce": _nonce(console)}
    return console.post(NEW, body, **extra)


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_anonymous_visitors_are_sent_to_the_login_page(client: Client) -> None:
    for response in (client.get(PAGE), client.get(NEW), client.post(NEW), client.post(ALL)):
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("persona", ["admin_user", "alice", "bob", "carol"])
def test_every_user_has_the_page_and_the_menu_link(
    persona: str, client_as: Any, request: pytest.FixtureRequest
) -> None:
    response = client_as(request.getfixturevalue(persona)).get(PAGE)
    assert response.status_code == 200
    assert f'href="{PAGE}" id="menu-api-tokens"'.encode() in response.content
    assert b"No tokens" in response.content and b"api-token-revoke-all" not in response.content


def test_the_list_shows_only_the_users_own_tokens_and_no_digest(
    alice: Any, carol: Any, client_as: Any
) -> None:
    mine = api_token_issue(user=alice, remote_addr="198.51.100.4", name="nightly-report").token
    api_token_issue(user=carol, remote_addr=None)
    response = client_as(alice).get(PAGE)
    assert _rows(response) == [mine.pk]
    page = response.content.decode()
    assert "198.51.100.4" in page and "nightly-report" in page and "not yet" in page
    assert mine.key_sha256 not in page
    assert "no-store" in response["Cache-Control"]


def test_a_new_token_is_shown_once_uncached_and_works(alice: Any, client_as: Any) -> None:
    console = client_as(alice)
    response = _make(console, "ci-runner", REMOTE_ADDR="203.0.113.5")
    assert response.status_code == 201
    assert "no-store" in response["Cache-Control"]
    key = response.context["key"]
    assert len(key) == 40 and key.encode() in response.content
    token = ApiToken.objects.get(user=alice)
    assert (token.name, token.remote_addr) == ("ci-runner", "203.0.113.5")
    assert token.key_sha256 == hashlib.sha256(key.encode()).hexdigest()
    assert _works(key)
    listing = console.get(PAGE)
    assert key.encode() not in listing.content  # never again
    assert b"ci-runner" in listing.content
    record = ChangeRecord.objects.get(target_type="api_token")
    assert (record.action, record.source, record.remote_addr) == ("added", "console", "203.0.113.5")
    assert record.actor == alice and key not in record.message
    assert record.message == f"API token {token.pk} issued (ci-runner)"


def test_sending_the_form_again_makes_no_second_token(alice: Any, client_as: Any) -> None:
    """A reload of the answer, or Back and send again, posts the same nonce."""
    console = client_as(alice)
    body = {"name": "", "password": PASSWORD, "expires": "90", "nonce": _nonce(console)}
    assert console.post(NEW, body).status_code == 201
    again = console.post(NEW, body, follow=True)
    assert again.redirect_chain == [(PAGE, 302)]
    assert "no other token was made" in " ".join(_messages(again))
    assert ApiToken.objects.count() == 1
    forged = console.post(NEW, {**body, "nonce": "made-up"}, follow=True)
    assert "no other token was made" in " ".join(_messages(forged))
    assert ApiToken.objects.count() == 1


@pytest.mark.parametrize(
    ("password", "error"),
    [("wrong", "That is not your password."), ("", "This field is required.")],
)
def test_the_password_is_asked_again(password: str, error: str, alice: Any, client_as: Any) -> None:
    console = client_as(alice)
    response = console.post(
        NEW, {"name": "x", "password": password, "expires": "90", "nonce": _nonce(console)}
    )
    assert response.status_code == 400
    assert response.context["form"].errors["password"] == [error]
    assert b'id="error-password"' in response.content and b"No token was made" in response.content
    assert not ApiToken.objects.exists()
    # The form comes back with a nonce that works.
    nonce = re.search(r'name="nonce" value="([^"]+)"', response.content.decode())
    assert nonce
    body = {"name": "x", "password": PASSWORD, "expires": "90", "nonce": nonce.group(1)}
    assert console.post(NEW, body).status_code == 201


def test_a_name_too_long_is_refused_naming_the_field(alice: Any, client_as: Any) -> None:
    response = _make(client_as(alice), "n" * 101)
    assert response.status_code == 400 and "name" in response.context["form"].errors
    assert not ApiToken.objects.exists()


def test_past_the_limit_the_page_says_which_token_went(
    alice: Any, client_as: Any, settings: Any
) -> None:
    settings.COMPOSER_API_TOKENS_PER_USER = 2
    first = api_token_issue(user=alice, remote_addr=None).token
    api_token_issue(user=alice, remote_addr=None)
    console = client_as(alice)
    form = console.get(NEW)
    assert b"api-token-at-limit" in form.content
    response = _make(console)
    assert response.status_code == 201 and response.context["revoked"] == (first.pk,)
    assert f"token {first.pk}, the least recently used, was revoked" in response.content.decode()


def test_the_csrf_token_is_needed(alice: Any) -> None:
    console = Client(enforce_csrf_checks=True)
    console.force_login(alice)
    token = api_token_issue(user=alice, remote_addr=None).token
    body = {"name": "", "password": PASSWORD, "expires": "90", "nonce": _nonce(console)}
    assert console.post(NEW, body).status_code == 403
    revoke = reverse("composer:api_token_revoke", args=[token.pk])
    assert console.post(revoke).status_code == 403
    assert console.post(ALL).status_code == 403
    assert ApiToken.objects.get() == token


def test_revoking_ones_own_token(alice: Any, client_as: Any) -> None:
    issued = api_token_issue(user=alice, remote_addr=None)
    kept = api_token_issue(user=alice, remote_addr=None).token
    console = client_as(alice)
    url = reverse("composer:api_token_revoke", args=[issued.token.pk])
    response = console.post(url, follow=True)
    assert response.redirect_chain == [(PAGE, 302)]
    assert f"API token {issued.token.pk} revoked" in " ".join(_messages(response))
    assert _rows(response) == [kept.pk]
    assert not _works(issued.key)
    record = ChangeRecord.objects.get(target_type="api_token", action="deleted")
    assert (record.source, record.actor) == ("console", alice)
    # Twice (another tab, a double click): said, not an error page.
    again = console.post(url, follow=True)
    assert again.status_code == 200
    assert "is not one of your tokens: nothing revoked" in " ".join(_messages(again))


def test_another_users_token_reads_as_none_and_stays(
    alice: Any, carol: Any, client_as: Any
) -> None:
    theirs = api_token_issue(user=carol, remote_addr=None)
    url = reverse("composer:api_token_revoke", args=[theirs.token.pk])
    response = client_as(alice).post(url, follow=True)
    assert "is not one of your tokens: nothing revoked" in " ".join(_messages(response))
    assert _works(theirs.key)
    assert client_as(alice).get(url).status_code == 405


def test_revoking_all_of_ones_tokens(alice: Any, carol: Any, client_as: Any) -> None:
    mine = [api_token_issue(user=alice, remote_addr=None).key for _ in range(2)]
    theirs = api_token_issue(user=carol, remote_addr=None).key
    console = client_as(alice)
    assert b"api-token-revoke-all" in console.get(PAGE).content
    response = console.post(ALL, follow=True)
    assert "2 API tokens revoked." in _messages(response)
    assert not any(_works(key) for key in mine) and _works(theirs)
    records = ChangeRecord.objects.filter(target_type="api_token", action="deleted")
    assert [(r.actor, r.source) for r in records] == [(alice, "console")] * 2
    assert "You hold no API tokens: nothing revoked." in _messages(console.post(ALL, follow=True))
    assert console.get(ALL).status_code == 405


@pytest.fixture(params=["locmem", "redis"])
def counters(request: pytest.FixtureRequest, settings: Any) -> str:
    """Where the nonces and password attempts are counted: the tests' in-process cache, and
    a real Redis (CI's, or an embedded one), under a key prefix of this test's own."""
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": url,
                "KEY_PREFIX": f"api-token-test-{uuid.uuid4().hex}",
            }
        }
    return str(request.param)


def test_wrong_passwords_are_limited_per_user(
    counters: str, alice: Any, carol: Any, client_as: Any
) -> None:
    console = client_as(alice)
    assert _make(console).status_code == 201  # a right one is not held against her
    for _ in range(5):
        response = console.post(
            NEW, {"password": "guess", "expires": "90", "nonce": _nonce(console)}
        )
        assert response.context["form"].errors["password"] == ["That is not your password."]
    response = console.post(NEW, {"password": PASSWORD, "expires": "90", "nonce": _nonce(console)})
    assert response.status_code == 400
    assert "Too many wrong passwords" in response.context["form"].errors["password"][0]
    assert ApiToken.objects.filter(user=alice).count() == 1
    assert _make(client_as(carol)).status_code == 201  # someone else's limit is theirs


def test_with_the_cache_away_a_token_is_still_made(
    alice: Any, client_as: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import composer.forms.api_tokens as form_module

    console = client_as(alice)
    nonce = _nonce(console)

    class Away:
        def __getattr__(self, name: str) -> Any:
            raise ConnectionError("the cache is away")

    monkeypatch.setattr(form_module, "cache", Away())
    body = {"name": "", "password": PASSWORD, "expires": "90", "nonce": nonce}
    assert console.post(NEW, body).status_code == 201
    again = console.post(NEW, body, follow=True)  # the session still stops a resend
    assert "no other token was made" in " ".join(_messages(again))
    assert ApiToken.objects.count() == 1


def test_two_sends_at_once_make_one_token(counters: str, alice: Any, client_as: Any) -> None:
    """Both requests read the session before either saves it: the second finds the nonce
    still listed there, and only the cache says it is spent."""
    console = client_as(alice)
    body = {"name": "", "password": PASSWORD, "expires": "90", "nonce": _nonce(console)}
    before = dict(console.session)
    assert console.post(NEW, body).status_code == 201
    session = console.session
    session.update(before)  # as the second request read it, before the first was saved
    session.save()
    again = console.post(NEW, body, follow=True)
    assert "no other token was made" in " ".join(_messages(again))
    assert ApiToken.objects.count() == 1


@pytest.mark.parametrize(("expires", "days"), [("90", 90), ("7", 7), ("never", None)])
def test_a_token_expires_as_chosen(
    expires: str, days: int | None, alice: Any, client_as: Any
) -> None:
    console = client_as(alice)
    body = {"name": "", "password": PASSWORD, "expires": expires, "nonce": _nonce(console)}
    before = timezone.now()
    response = console.post(NEW, body)
    assert response.status_code == 201
    token = ApiToken.objects.get()
    if days is None:
        assert token.expires_at is None and b"until revoked" in response.content
    else:
        assert token.expires_at is not None
        assert (
            before + timedelta(days=days)
            <= token.expires_at
            <= timezone.now() + timedelta(days=days)
        )


def test_an_unknown_lifetime_is_refused_naming_the_field(alice: Any, client_as: Any) -> None:
    console = client_as(alice)
    body = {"name": "", "password": PASSWORD, "expires": "1000", "nonce": _nonce(console)}
    response = console.post(NEW, body)
    assert response.status_code == 400 and "expires" in response.context["form"].errors
    assert not ApiToken.objects.exists()


def test_the_list_says_when_each_token_expires(alice: Any, client_as: Any) -> None:
    api_token_issue(user=alice, remote_addr=None, name="forever")
    lapsing = api_token_issue(user=alice, remote_addr=None, lifetime=timedelta(days=1)).token
    ApiToken.objects.filter(pk=lapsing.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    page = client_as(alice).get(PAGE).content.decode()
    row = page.split(f'data-token="{lapsing.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "expired" in row
    assert "never" in page.split('data-token="', 2)[2].split("</tr>", 1)[0]
