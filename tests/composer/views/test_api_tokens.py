"""The *API tokens* page: a user's own tokens, a new one shown once, a revocation."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from composer.models import ApiToken
from composer.services.api_tokens import api_token_issue
from fabric.models import ChangeRecord

pytestmark = pytest.mark.django_db

PAGE = reverse("composer:api_tokens")
NEW = reverse("composer:api_token_create")


def _rows(response: Any) -> list[int]:
    return [token.pk for token in response.context["tokens"]]


def test_anonymous_visitors_are_sent_to_the_login_page(client: Client) -> None:
    for response in (client.get(PAGE), client.post(NEW)):
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("persona", ["admin_user", "alice", "bob", "carol"])
def test_every_user_has_the_page_and_the_menu_link(
    persona: str, client_as: Any, request: pytest.FixtureRequest
) -> None:
    response = client_as(request.getfixturevalue(persona)).get(PAGE)
    assert response.status_code == 200
    assert f'href="{PAGE}" id="menu-api-tokens"'.encode() in response.content
    assert b"No tokens" in response.content


def test_the_list_shows_only_the_users_own_tokens_and_no_digest(
    alice: Any, carol: Any, client_as: Any
) -> None:
    mine = api_token_issue(user=alice, remote_addr="198.51.100.4")[0]
    api_token_issue(user=carol, remote_addr=None)
    response = client_as(alice).get(PAGE)
    assert _rows(response) == [mine.pk]
    assert b"198.51.100.4" in response.content and b"not yet" in response.content
    assert mine.key_sha256.encode() not in response.content


def test_a_new_token_is_shown_once_uncached_and_works(alice: Any, client_as: Any) -> None:
    console = client_as(alice)
    response = console.post(NEW, REMOTE_ADDR="203.0.113.5")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    key = response.context["key"]
    assert len(key) == 40 and key.encode() in response.content
    token = ApiToken.objects.get(user=alice)
    assert token.key_sha256 == hashlib.sha256(key.encode()).hexdigest()
    assert _rows(response) == [token.pk]
    assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/").status_code == 200
    assert key.encode() not in console.get(PAGE).content  # never again
    record = ChangeRecord.objects.get(target_type="api_token")
    assert (record.action, record.source, record.remote_addr) == ("added", "console", "203.0.113.5")
    assert record.actor == alice and key not in record.message


def test_issuing_needs_a_post(alice: Any, client_as: Any) -> None:
    assert client_as(alice).get(NEW).status_code == 405
    assert not ApiToken.objects.exists()


def test_revoking_ones_own_token(alice: Any, client_as: Any) -> None:
    token, key = api_token_issue(user=alice, remote_addr=None)
    kept = api_token_issue(user=alice, remote_addr=None)[0]
    console = client_as(alice)
    response = console.post(reverse("composer:api_token_revoke", args=[token.pk]), follow=True)
    assert response.redirect_chain == [(PAGE, 302)]
    assert f"API token {token.pk} revoked" in response.content.decode()
    assert _rows(response) == [kept.pk]
    response = APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/")
    assert response.status_code == 401
    record = ChangeRecord.objects.get(target_type="api_token", action="deleted")
    assert (record.source, record.actor) == ("console", alice)


def test_another_users_token_is_404_and_stays(alice: Any, carol: Any, client_as: Any) -> None:
    theirs = api_token_issue(user=carol, remote_addr=None)[0]
    url = reverse("composer:api_token_revoke", args=[theirs.pk])
    assert client_as(alice).post(url).status_code == 404
    assert ApiToken.objects.filter(pk=theirs.pk).exists()
    assert client_as(alice).get(url).status_code == 405
