"""The templates page: what each template asks for, for everyone signed in (members: the active
ones they may request from), with a Request link that opens the form with it picked; sorted,
filtered, exported, and an empty state that says why."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.models import Template
from tests.support.personas import PERSONAS

pytestmark = pytest.mark.django_db

URL = reverse("composer:composition_templates")
NEW = reverse("composer:composition_create")


def _template(slug: str, spec: dict[str, Any], *, active: bool = True, **fields: Any) -> Template:
    template = Template(name=slug, slug=slug, spec=spec, is_active=active, **fields)
    template.full_clean()
    template.save()
    return template


@pytest.fixture
def templates(db: None) -> dict[str, Template]:
    return {
        "train": _template(
            "training-8gpu",
            {"items": [{"kind": "gpu", "count": 8}], "cores": 64, "policy": "enclosure"},
            description="Eight GPUs spread over enclosures.",
        ),
        "infer": _template(
            "inference-2gpu-bigmem",
            {
                "items": [{"kind": "gpu", "count": 2}],
                "memory_gib": 1024,
                "max_latency_ns": 800,
                "host": "host-secret-01",
                "self_heal": True,
            },
            description="Two GPUs and 1 TiB of CXL memory.",
        ),
        "retired": _template("retired", {"cores": 4}, active=False),
    }


def _slugs(response: Any) -> list[str]:
    assert response.status_code == 200, response.content[:300]
    return [row["template"].slug for row in response.context["rows"]]


def _body(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


@pytest.mark.parametrize("who", PERSONAS)
def test_everyone_signed_in_sees_the_templates_they_may_request_from(
    who: str,
    templates: dict[str, Template],
    acme: Any,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(persona(who)).get(URL)
    expected = ["inference-2gpu-bigmem", "training-8gpu"]
    if who == "admin_user":
        expected = ["inference-2gpu-bigmem", "retired", "training-8gpu"]
    assert _slugs(response) == expected
    body = response.content.decode()
    assert "2 GPUs, 1 TiB of CXL memory" in body and "within 800 ns" in body
    assert "8 GPUs, 64 host cores; spread across enclosures" in body
    # A pinned host is a fabric internal: members read that there is one, not which.
    assert ("host-secret-01" in body) is (who == "admin_user")
    # The request form with the template picked, for whoever may request (not read-only bob;
    # operators request for any active tenant).
    link = f'href="{NEW}?template=training-8gpu"'
    assert (link in body) is (who != "bob")
    assert f'href="{NEW}?template=retired"' not in body


def test_the_page_needs_a_login(client: Client) -> None:
    assert client.get(URL).status_code == 302


def test_templates_sort_filter_and_export(
    templates: dict[str, Template], admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    response = client.get(URL, {"ordering": "-name"})
    assert _slugs(response) == ["training-8gpu", "retired", "inference-2gpu-bigmem"]
    assert 'aria-sort="descending"' in response.content.decode()
    assert _slugs(client.get(URL, {"q": "CXL"})) == ["inference-2gpu-bigmem"]
    assert _slugs(client.get(URL, {"is_active": "false"})) == ["retired"]
    rows = list(
        csv.DictReader(io.StringIO(_body(client.get(URL, {"export": "csv", "ordering": "name"}))))
    )
    assert [r["slug"] for r in rows] == ["inference-2gpu-bigmem", "retired", "training-8gpu"]
    assert list(rows[0]) == ["name", "slug", "description", "asks_for", "is_active", "updated_at"]
    assert rows[1]["is_active"] == "False" and rows[2]["asks_for"].startswith("8 GPUs")
    filtered = json.loads(_body(client.get(URL, {"export": "json", "q": "eight"})))
    assert [r["slug"] for r in filtered] == ["training-8gpu"]


def test_a_member_exports_the_active_templates_in_their_words(
    templates: dict[str, Template], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(URL, {"export": "json", "is_active": "false"})
    rows = json.loads(_body(response))
    # The active filter is operators' (members only ever see active ones): ignored for them.
    assert [r["slug"] for r in rows] == ["inference-2gpu-bigmem", "training-8gpu"]
    assert "is_active" not in rows[0]
    assert "on a set host" in rows[0]["asks_for"] and "host-secret-01" not in json.dumps(rows)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"ordering": "slug"}, "Ordering: Select a valid choice. slug is not one"),
        ({"export": "xml"}, "Export: must be csv or json"),
        ({"is_active": "maybe"}, "Active: Expected true or false."),
        ({"q": "x" * 101}, "Search: Ensure this value has at most 100 characters"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    query: dict[str, str],
    message: str,
    templates: dict[str, Template],
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(admin_user).get(URL, query)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_an_empty_template_list_says_why(
    templates: dict[str, Template], carol: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(carol)
    body = client.get(URL, {"q": "quantum"}).content.decode()
    assert "No templates match these filters</strong> (Search: “quantum”)" in body
    assert "2 templates in all" in body
    Template.objects.all().delete()
    body = client.get(URL).content.decode()
    assert "No templates to request from yet: an operator adds them." in body


def test_the_request_link_opens_the_form_with_the_template_picked(
    templates: dict[str, Template], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    response = client.get(NEW, {"template": "inference-2gpu-bigmem"})
    assert response.status_code == 200
    form = response.context["form"]
    assert form["template"].value() == templates["infer"].pk
    assert form["self_heal"].value() is True  # the template's default, changeable
    body = response.content.decode()
    assert f'<option value="{templates["infer"].pk}" selected>' in body
    assert f'href="{URL}"' in body  # and back to every template


@pytest.mark.parametrize("slug", ["retired", "no-such-template"])
def test_an_unknown_or_inactive_template_is_named_and_nothing_is_picked(
    slug: str, templates: dict[str, Template], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(NEW, {"template": slug})
    assert response.status_code == 400
    assert response.context["form"]["template"].value() is None
    assert f"Template: No active template “{slug}” to request from" in response.content.decode()


def test_the_compositions_page_links_to_the_templates(
    alice: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(alice).get(reverse("composer:composition_list")).content.decode()
    assert f'id="composition-templates" href="{URL}"' in body
