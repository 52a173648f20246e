"""App config of the simulated fabric manager's own state (see `models`)."""

from __future__ import annotations

from django.apps import AppConfig


class SimulatedFabricConfig(AppConfig):
    """The simulated manager's tables and their admin. Optional, with the simulator's
    console (`COMPOSER_SIMULATOR`): without it the product runs, and a manager naming the
    simulated driver gets a driver error saying the simulator is not installed."""

    name = "fabric.drivers.simulated"
    label = "simulated_fabric"
    verbose_name = "Simulated fabric manager"
    default_auto_field = "django.db.models.BigAutoField"
