"""Error pages: 400 and 500 render without a request context and without the database.

The first two tests have no database access at all (pytest-django blocks it and would raise),
which is the point: a 500 page must render while the database is the thing that is down.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse
from django.views import defaults


def test_the_500_page_needs_no_database() -> None:
    response = defaults.server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong on our side" in body
    assert "/static/vendor/bootstrap-5.3.8.min.css" in body


def test_the_400_page_needs_no_database() -> None:
    response = defaults.bad_request(RequestFactory().get("/"), Exception("bad"))
    assert response.status_code == 400
    assert "could not be understood" in response.content.decode()


@pytest.mark.django_db
def test_the_403_page_says_why(alice: Any) -> None:
    request = RequestFactory().get("/")
    request.user = alice
    response = defaults.permission_denied(request, Exception("Read-only members cannot do this."))
    assert response.status_code == 403
    assert "Read-only members cannot do this." in response.content.decode()


@pytest.mark.django_db
def test_a_refused_form_gets_the_consoles_page_not_djangos(alice: Any) -> None:
    """With DEBUG off Django's own CSRF page is a bare 'CSRF verification failed'."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post(reverse("logout"))

    assert response.status_code == 403
    body = response.content.decode()
    assert "The form could not be accepted" in body and "reload the page" in body
    assert 'class="error-code">403' in body and "alice" in body
    assert "CSRF verification failed" not in body
