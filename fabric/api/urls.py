"""The fabric app's API router; composer.api.urls mounts it at /api/v1/ (namespace `api`).

Pools are addressed by slug (`/api/v1/pools/h100/`), everything else by numeric id.
"""

from __future__ import annotations

from django.urls import path

from fabric.api import alerts, managers, topology, views
from fabric.api.routers import Router

router = Router()
router.register("pools", views.PoolViewSet, basename="pool")
router.register("devices", views.DeviceViewSet, basename="device")
router.register("hosts", views.HostViewSet, basename="host")
router.register("enclosures", views.EnclosureViewSet, basename="enclosure")
router.register("switches", views.SwitchViewSet, basename="switch")
router.register("links", views.LinkViewSet, basename="link")
router.register("fabric-managers", managers.FabricManagerViewSet, basename="fabric_manager")
router.register("racks", views.RackViewSet, basename="rack")
router.register("power-feeds", views.PowerFeedViewSet, basename="power_feed")
router.register("failure-domains", topology.FailureDomainViewSet, basename="failure_domain")
router.register("alerts", alerts.AlertViewSet, basename="alert")

urlpatterns = [
    path("topology/", topology.TopologyView.as_view(), name="topology"),
    path("paths/", topology.PathsView.as_view(), name="paths"),
    *router.urls,
]
