"""The REST API at /api/v1/ (namespace `api`): both apps' routers, auth, and a JSON 404.

One router per app: fabric's resources come from `fabric.api.urls`, composer's
from the router below. URL names are `<entity>_<view>` (`api:device_detail`).
"""

from __future__ import annotations

from django.apps import apps
from django.urls import include, path, re_path
from rest_framework.routers import APIRootView

from composer.api import (
    audit,
    bookings,
    calendar,
    compositions,
    counterfactual,
    events,
    notifications,
    quotas,
    reconcile,
    search,
    server_shapes,
    templates,
    utilisation,
    views,
)
from fabric.api.routers import Router
from fabric.api.urls import router as fabric_router

app_name = "api"

router = Router()
router.register("jobs", views.JobViewSet, basename="job")
router.register("templates", templates.TemplateViewSet, basename="template")
router.register("quotas", quotas.QuotaViewSet, basename="quota")
router.register("compositions", compositions.CompositionViewSet, basename="composition")
router.register("bookings", bookings.BookingViewSet, basename="booking")
router.register("server-shapes", server_shapes.ServerShapeViewSet, basename="server_shape")
router.register("reconcile/runs", reconcile.ReconcileRunViewSet, basename="reconcile_run")
router.register("notification-routes", notifications.RouteViewSet, basename="notification_route")
router.register("webhooks", notifications.WebhookViewSet, basename="webhook")
router.register(
    "notification-deliveries", notifications.DeliveryViewSet, basename="notification_delivery"
)
router.register("silences", notifications.SilenceViewSet, basename="silence")


def _root_dict() -> dict[str, str]:
    """{prefix: list URL name} of every registered list, for the browsable API's root page."""
    return {
        prefix: f"{basename}_list"
        for registry in (fabric_router.registry, router.registry)
        for prefix, _viewset, basename in registry
    }


urlpatterns = [
    path("", APIRootView.as_view(api_root_dict=_root_dict()), name="api_root"),
    path("auth/token/", views.AuthTokenView.as_view(), name="auth_token"),
    # <str:pk>: a non-numeric id reaches the view and answers a JSON 404, like the routers'.
    path(
        "fabric-managers/<str:pk>/sync/",
        views.FabricManagerSyncView.as_view(),
        name="fabric_manager_sync",
    ),
    # The simulator's fault injection, only where that optional app is installed (by name:
    # the product never imports it); elsewhere its path is the JSON 404 below.
    *(
        [path("", include("fabric.simulator.console.api_urls"))]
        if apps.is_installed("fabric.simulator")
        else []
    ),
    path("events/", events.EventListView.as_view(), name="event_list"),
    path("audit/", audit.AuditListView.as_view(), name="audit_list"),
    path("search/", search.SearchView.as_view(), name="search"),
    path("calendar/", calendar.CalendarView.as_view(), name="calendar"),
    path("counterfactual/", counterfactual.CounterfactualView.as_view(), name="counterfactual"),
    path("utilisation/", utilisation.UtilisationView.as_view(), name="utilisation"),
    path("", include("fabric.api.urls")),
    path("", include(router.urls)),
    # Last: any other path ending in a slash (line breaks included: `%0A`) is a JSON 404.
    # Paths without the slash still get CommonMiddleware's APPEND_SLASH redirect first.
    re_path(r"^[\s\S]*/$", views.NotFoundView.as_view()),
]
