"""The token exchange: credentials in, a new API token out."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from composer.services.api_tokens import MAX_DAYS
from fabric.api.fields import StrictCharField


class _Days(serializers.IntegerField):
    """A JSON integer (not "30", not true)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


class TokenRequestSerializer(serializers.Serializer):
    """Credentials exchanged for an API token."""

    username = StrictCharField(max_length=150)
    password = StrictCharField(
        max_length=4096, trim_whitespace=False, style={"input_type": "password"}, write_only=True
    )
    name = StrictCharField(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text="What the token is for (the script or machine holding it); optional.",
    )
    expires_in_days = _Days(
        min_value=1,
        max_value=MAX_DAYS,
        required=False,
        allow_null=True,
        help_text=f"Days until the token stops working (1 to {MAX_DAYS}); left out or null, "
        "it works until revoked.",
    )


class TokenSerializer(serializers.Serializer):
    """A new API token: send it as `Authorization: Token <token>`. It is shown this once."""

    id = serializers.IntegerField(read_only=True, help_text="Names the token in the audit.")
    name = serializers.CharField(read_only=True)
    expires_at = serializers.DateTimeField(read_only=True, allow_null=True)
    token = serializers.CharField(read_only=True)
