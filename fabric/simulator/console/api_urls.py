"""The simulator's API route: `POST /api/v1/simulator/faults/` (`api:simulator_faults`).

Included by `composer.api.urls` (in the `api` namespace, before its JSON 404 for unknown
paths) only where this app is installed; without it the path answers that JSON 404. Apart
from `urls` because a URL map is included by module, and the page and the API are included
into different maps.
"""

from __future__ import annotations

from django.urls import path

from fabric.simulator.console import api

urlpatterns = [
    path("simulator/faults/", api.SimulatorFaultView.as_view(), name="simulator_faults"),
]
