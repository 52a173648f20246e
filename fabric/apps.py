"""App config for the physical fabric domain."""

from __future__ import annotations

from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabric"
    verbose_name = "Fabric"
    default_auto_field = "django.db.models.BigAutoField"
