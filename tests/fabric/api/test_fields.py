"""The strict body fields read a missing key as missing, whatever the data's type."""

from __future__ import annotations

import pytest
from django.http import QueryDict
from rest_framework import serializers

from fabric.api.fields import StrictBooleanField, StrictCharField, StrictSlugField
from fabric.api.maintenance import MaintenanceInput


class _Body(serializers.Serializer):
    flag = StrictBooleanField()
    text = StrictCharField()
    slug = StrictSlugField()


@pytest.mark.parametrize("data", [QueryDict(""), QueryDict("other=1"), {}], ids=str)
def test_a_missing_field_is_required_even_in_form_data(data: object) -> None:
    """DRF reads a boolean missing from a QueryDict (form data) as false: an unchecked box.
    These fields are for JSON bodies, where missing means missing."""
    serializer = _Body(data=data)
    assert not serializer.is_valid()
    assert {name: [str(e) for e in errors] for name, errors in serializer.errors.items()} == {
        name: ["This field is required."] for name in ("flag", "text", "slug")
    }


def test_the_maintenance_body_without_on_is_refused_even_as_form_data() -> None:
    serializer = MaintenanceInput(data=QueryDict("reason=x"))
    assert not serializer.is_valid()
    assert serializer.errors["on"][0].code == "required"


def test_a_partial_update_may_still_leave_a_field_out() -> None:
    serializer = _Body(data=QueryDict("text=x"), partial=True)
    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data == {"text": "x"}
