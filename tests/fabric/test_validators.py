"""fabric.validators: one rule for names and free text, applied where text comes in."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from fabric.models import FabricManager, Switch
from fabric.services.maintenance import maintenance_set
from fabric.services.sync import inventory_sync
from fabric.validators import check_text_fields, text_problem, validate_free_text, validate_name


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("\x1b[31mred", "U+001B, at character 1"),
        ("a\x00b", "U+0000, at character 2"),
        ("del\x7f", "U+007F"),
        ("c1\x9b31m", "U+009B"),
        ("abc\u202e", "U+202E"),
        ("x\ud800", "U+D800"),
        ("two\nlines", "U+000A"),
        ("para\u2029graph", "U+2029"),
    ],
)
def test_names_refuse_what_a_terminal_or_a_page_would_misread(text: str, where: str) -> None:
    problem = text_problem(text)
    assert problem is not None and where in problem
    with pytest.raises(ValidationError):
        validate_name(text)


@pytest.mark.parametrize("text", ["gpu-a-01", "Übung 2", "训练 8 H100", "a b", "émoji 🚀", ""])
def test_printable_names_pass(text: str) -> None:
    assert text_problem(text) is None
    validate_name(text)


def test_free_text_may_hold_line_breaks_and_tabs_but_not_escapes() -> None:
    validate_free_text("Replacing the fan.\r\n\tTicket 42.")
    with pytest.raises(ValidationError):
        validate_free_text("line one\n\x1b[2J")


def test_check_text_fields_names_every_bad_field() -> None:
    with pytest.raises(ValidationError) as caught:
        check_text_fields(
            names={"name": "ok", "model": "\x1b"}, free_text={"description": "a\nb\x07"}
        )
    assert set(caught.value.message_dict) == {"model", "description"}


@pytest.mark.django_db
def test_the_maintenance_service_refuses_an_escape_in_the_reason(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    switch = Switch.objects.order_by("pk").first()
    with pytest.raises(ValidationError) as caught:
        maintenance_set(target=switch, on=True, reason="\x1b[31m")
    assert "reason" in caught.value.message_dict
