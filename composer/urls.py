"""The project's URL map: pages of both apps, the API, its schema and docs, the admin.

Composer's Redfish service (`composer.redfish`) answers /redfish and /redfish/v1/... .
The optional simulator app's page and API route come in through `composer.views.urls` and
`composer.api.urls`, only where it is installed.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from composer.api.views import NotFoundView

urlpatterns = [
    # /healthz, /readyz, /metrics (composer.monitoring): probes and Prometheus, first.
    path("", include("composer.monitoring.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("composer.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api_schema"), name="api_docs"),
    # Anything else under /api/ (ending in a slash, as under /api/v1/) is a JSON 404 too.
    re_path(r"^api/[\s\S]*/$", NotFoundView.as_view()),
    path("", include("composer.redfish.urls")),
    path("fabric/", include("fabric.urls")),
    path("", include("composer.views.urls")),
]

handler500 = "composer.views.errors.server_error"
