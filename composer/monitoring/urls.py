"""The operability endpoints, at the root of the site (where probes and scrapers look)."""

from __future__ import annotations

from django.urls import path

from composer.monitoring import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
]
