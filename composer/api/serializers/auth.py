"""The token exchange: credentials in, a new API token out."""

from __future__ import annotations

from rest_framework import serializers

from fabric.api.fields import StrictCharField


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


class TokenSerializer(serializers.Serializer):
    """A new API token: send it as `Authorization: Token <token>`. It is shown this once."""

    id = serializers.IntegerField(read_only=True, help_text="Names the token in the audit.")
    name = serializers.CharField(read_only=True)
    token = serializers.CharField(read_only=True)
