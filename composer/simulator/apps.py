"""App config of the simulator's console (see the package docstring): optional, no models."""

from __future__ import annotations

from django.apps import AppConfig


class SimulatorConfig(AppConfig):
    """The console side of the simulated fabric manager: demo data centre, fault injection.

    Optional: the product runs without it (`COMPOSER_SIMULATOR=0`). Its admin module adds
    the fault-injection actions to fabric's admin classes when Django's admin autodiscovery
    imports it, after fabric's own admin has registered them.
    """

    name = "composer.simulator"
    label = "simulator"
    verbose_name = "Simulator"
