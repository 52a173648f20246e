"""The simulator's page: `/simulator/faults/` (`composer:fault_injection`).

Included by `composer.views.urls` (so the name is in the `composer` namespace, as the
console's other pages) only where this app is installed; its API route is in `api_urls`.
"""

from __future__ import annotations

from django.urls import path

from fabric.simulator.console import views

urlpatterns = [
    path("simulator/faults/", views.fault_injection, name="fault_injection"),
]
