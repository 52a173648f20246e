"""The counterfactual page: operators see the answer and the method; members get 404."""

from __future__ import annotations

from typing import Any

import pytest

from tests.composer.counterfactual.history import END, START, build_history, eight_gpu_shape

pytestmark = pytest.mark.django_db

URL = "/counterfactual/"


def test_an_operator_sees_the_replay_the_method_and_the_catalogue(
    acme: Any, client_as: Any, admin_user: Any
) -> None:
    build_history(acme)
    shape = eight_gpu_shape()
    params = {
        "start": START.strftime("%Y-%m-%dT%H:%M"),
        "end": END.strftime("%Y-%m-%dT%H:%M"),
        "shape": [shape.pk],
    }
    response = client_as(admin_user).get(URL, params)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="counterfactual-result"' in html
    assert '<strong id="servers-at-peak">1</strong>' in html
    assert "The 3 compositions of the period" in html
    assert "Method" in html and "best fit" in html
    assert 'id="server-shapes"' in html and "8-GPU" in html


def test_the_first_visit_answers_for_the_last_seven_days(client_as: Any, admin_user: Any) -> None:
    eight_gpu_shape()
    response = client_as(admin_user).get(URL)
    assert response.status_code == 200
    assert "No composition was up in this period" in response.content.decode()


def test_without_shapes_the_page_says_how_to_add_them(client_as: Any, admin_user: Any) -> None:
    response = client_as(admin_user).get(URL)
    assert response.status_code == 200  # an empty catalogue is a state, not bad input
    html = response.content.decode()
    assert "Server shapes: The catalogue has no server shapes" in html
    assert "manage.py seed_server_shapes" in html


def test_a_bad_period_is_named_next_to_the_form(client_as: Any, admin_user: Any) -> None:
    eight_gpu_shape()
    response = client_as(admin_user).get(
        URL, {"start": "2026-12-02T00:00", "end": "2026-12-01T00:00"}
    )
    assert response.status_code == 400
    assert "To: To must be after From." in response.content.decode()


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_tenant_members_get_404(who: str, persona: Any, client_as: Any) -> None:
    assert client_as(persona(who)).get(URL).status_code == 404
