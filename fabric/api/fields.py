"""Body fields that take the JSON type the schema names, and only that.

DRF's CharField takes a number (`"reason": 0` becomes "0") and its BooleanField takes 0, 1,
"yes" and "on": lenient for HTML forms, which the API does not accept, and a lie for the
schema, which says `string` and `boolean`. These refuse anything else, with DRF's own
messages ("Not a valid string.", "Must be a valid boolean."). For JSON bodies only: query
parameters are text and keep DRF's fields.

A field missing from the body is missing, whatever the data's type: DRF reads a boolean
absent from form data (a QueryDict) as false, an unchecked box; these fields say "This field
is required." (`default_empty_html = empty`), as they do for JSON.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from rest_framework import serializers
from rest_framework.fields import empty


class StrictCharField(serializers.CharField):
    """A JSON string."""

    default_empty_html = empty

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSlugField(serializers.SlugField):
    """A JSON string that is a slug."""

    default_empty_html = empty

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false."""

    default_empty_html = empty

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictModelSerializerMixin:
    """For ModelSerializers that take JSON bodies: the model's text and boolean columns map to
    the strict fields above."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.SlugField: StrictSlugField,
        models.BooleanField: StrictBooleanField,
    }
