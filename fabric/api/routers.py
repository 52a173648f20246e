"""The API router: DRF's SimpleRouter with URL names in the house style.

DRF names routes `device-list` / `device-detail`; the project names URLs `<entity>_<view>`,
so this router names them `device_list` / `device_detail` (reversed as `api:device_detail`,
since composer.api.urls mounts every app's router in the `api` namespace).
"""

from __future__ import annotations

from rest_framework.routers import SimpleRouter


class Router(SimpleRouter):
    """SimpleRouter whose route names use underscores: `<basename>_list`, `_detail`, ..."""

    routes = [route._replace(name=route.name.replace("-", "_")) for route in SimpleRouter.routes]
