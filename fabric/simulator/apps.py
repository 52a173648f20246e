"""App config of the simulator (see the package docstring)."""

from __future__ import annotations

from django.apps import AppConfig


class SimulatorConfig(AppConfig):
    """The simulated fabric manager: its tables, driver, admin, demo and fault injection.

    Optional (`COMPOSER_SIMULATOR`): without it the product runs, and a manager naming the
    simulated driver gets a driver error saying the simulator is not installed. The label
    is the one its tables and migrations have always had. Its admin module adds the
    fault-injection actions to fabric's admin classes when Django's admin autodiscovery
    imports it, after fabric's own admin has registered them (INSTALLED_APPS order).
    """

    name = "fabric.simulator"
    label = "simulated_fabric"
    verbose_name = "Simulator"
    default_auto_field = "django.db.models.BigAutoField"
