"""The fabric's pages, mounted at /fabric/: devices for everyone, the rest for operators."""

from __future__ import annotations

from django.urls import path

from fabric import views

app_name = "fabric"
urlpatterns = [
    path("devices/", views.device_list, name="device_list"),
    path("devices/<int:pk>/", views.device_detail, name="device_detail"),
    path(
        "devices/<int:pk>/maintenance/",
        views.maintenance,
        {"kind": "device"},
        name="device_maintenance",
    ),
    path("maintenance/", views.bulk_maintenance, name="bulk_maintenance"),
    path("hosts/", views.host_list, name="host_list"),
    path("hosts/<int:pk>/", views.host_detail, name="host_detail"),
    path("enclosures/", views.enclosure_list, name="enclosure_list"),
    path("enclosures/<int:pk>/", views.enclosure_detail, name="enclosure_detail"),
    path(
        "enclosures/<int:pk>/maintenance/",
        views.maintenance,
        {"kind": "enclosure"},
        name="enclosure_maintenance",
    ),
    path("switches/", views.switch_list, name="switch_list"),
    path("switches/<int:pk>/", views.switch_detail, name="switch_detail"),
    path(
        "switches/<int:pk>/maintenance/",
        views.maintenance,
        {"kind": "switch"},
        name="switch_maintenance",
    ),
    path("racks/", views.rack_list, name="rack_list"),
    path("racks/<int:pk>/", views.rack_detail, name="rack_detail"),
    path("power-feeds/", views.power_feed_list, name="power_feed_list"),
    path("power-feeds/<int:pk>/", views.power_feed_detail, name="power_feed_detail"),
    path("links/", views.link_list, name="link_list"),
    path("links/<int:pk>/", views.link_detail, name="link_detail"),
    path("managers/", views.manager_list, name="manager_list"),
    path("managers/new/", views.manager_create_view, name="manager_create"),
    path(
        "managers/test-connection/",
        views.manager_test_entered_view,
        name="manager_test_entered",
    ),
    path("managers/<int:pk>/", views.manager_detail, name="manager_detail"),
    path("managers/<int:pk>/edit/", views.manager_edit_view, name="manager_edit"),
    path("managers/<int:pk>/enabled/", views.manager_enabled_view, name="manager_enabled"),
    path("managers/<int:pk>/delete/", views.manager_delete_view, name="manager_delete"),
    path(
        "managers/<int:pk>/test-connection/",
        views.manager_test_view,
        name="manager_test",
    ),
    path("topology/", views.topology, name="topology"),
    path("failure-domains/", views.failure_domain_list, name="failure_domain_list"),
    path("failure-domains/what-if/", views.failure_domain_what_if, name="failure_domain_what_if"),
]
