"""App config for the logical world: tenants, jobs, compositions."""

from __future__ import annotations

from django.apps import AppConfig


class ComposerConfig(AppConfig):
    name = "composer"
    verbose_name = "Composer"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The fabric's pages ask who holds a device; compositions answer (fabric never
        # imports composer, so the answer is registered from here).
        from composer.selectors.compositions import device_holder_rows
        from fabric.holders import register_holder_lookup

        register_holder_lookup(device_holder_rows)
