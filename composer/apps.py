"""App config for the logical world: tenants, jobs, and (later) compositions."""

from __future__ import annotations

from django.apps import AppConfig


class ComposerConfig(AppConfig):
    name = "composer"
    verbose_name = "Composer"
    default_auto_field = "django.db.models.BigAutoField"
