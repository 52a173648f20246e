"""Logging in and out, and that every console page needs a login."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories.composer import PASSWORD, JobFactory
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db


def _console_urls(small: SmallFabric) -> list[str]:
    job = JobFactory.create()
    return [
        reverse("composer:dashboard"),
        reverse("composer:pool_list"),
        reverse("composer:pool_detail", args=["h100"]),
        reverse("composer:job_list"),
        reverse("composer:job_detail", args=[job.pk]),
        reverse("composer:job_progress", args=[job.pk]),
        reverse("fabric:device_list"),
        reverse("fabric:device_detail", args=[small.gpus[0].pk]),
        reverse("fabric:host_list"),
        reverse("fabric:host_detail", args=[small.hosts[0].pk]),
        reverse("fabric:enclosure_list"),
        reverse("fabric:enclosure_detail", args=[small.enclosures[0].pk]),
        reverse("fabric:switch_list"),
        reverse("fabric:switch_detail", args=[small.switches[0].pk]),
        reverse("fabric:manager_list"),
        reverse("fabric:manager_detail", args=[small.manager.pk]),
    ]


def test_anonymous_visitors_are_sent_to_the_login_page(small: SmallFabric, client: Client) -> None:
    for url in _console_urls(small):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"{reverse('login')}?next={url}", url
    sync = client.post(reverse("composer:manager_sync", args=[small.manager.pk]))
    assert sync.status_code == 302 and sync["Location"].startswith(reverse("login"))


def test_the_login_page_has_a_form_and_nothing_secret(client: Client) -> None:
    response = client.get(reverse("login"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="username"' in body and 'type="password"' in body
    assert '<button type="submit"' in body
    assert reverse("admin:index") not in body and "Dashboard</a>" not in body


def test_a_wrong_password_is_refused_with_a_message(alice: Any, client: Client) -> None:
    response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "Please enter a correct username and password" in body
    assert "wrong" not in body.split("<main", 1)[1]


def test_logging_in_leads_to_the_dashboard_and_logging_out_ends_the_session(
    alice: Any, client: Client
) -> None:
    response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("composer:dashboard")
    page = client.get(reverse("composer:dashboard")).content.decode()
    assert "Acme" in page  # the user menu names the tenant
    assert f'action="{reverse("logout")}"' in page
    out = client.post(reverse("logout"))
    assert out.status_code == 302 and out["Location"] == reverse("login")
    assert client.get(reverse("composer:dashboard")).status_code == 302


def test_the_navbar_shows_operator_pages_to_operators_only(
    small: SmallFabric, admin_user: Any, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    operator_links = [
        reverse("fabric:host_list"),
        reverse("fabric:enclosure_list"),
        reverse("fabric:switch_list"),
        reverse("fabric:manager_list"),
        reverse("admin:index"),
        reverse("api_docs"),
    ]
    admin_page = client_as(admin_user).get(reverse("composer:pool_list")).content.decode()
    for link in operator_links:
        assert f'href="{link}"' in admin_page
    carol_page = client_as(carol).get(reverse("composer:pool_list")).content.decode()
    for link in operator_links:
        assert f'href="{link}"' not in carol_page
    assert "Globex" in carol_page


def test_an_unknown_address_is_a_plain_404(alice: Any, client_as: Callable[[Any], Client]) -> None:
    response = client_as(alice).get("/no/such/page/")
    assert response.status_code == 404
    assert "Not found" in response.content.decode()


def test_no_page_leaks_template_syntax(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    for url in _console_urls(small):
        body = client.get(url).content.decode()
        for marker in ("{#", "#}", "{%", "%}", "{{", "}}"):
            assert marker not in body, (url, marker)
