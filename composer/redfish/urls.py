"""/redfish and everything under /redfish/v1 (composer.redfish.views)."""

from __future__ import annotations

from django.urls import re_path

from composer.redfish import views

urlpatterns = [
    re_path(r"^redfish/?$", views.version, name="redfish_version"),
    re_path(r"^redfish/v1(?P<rest>/.*)?$", views.serve, name="redfish"),
]
