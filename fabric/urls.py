"""URL routes."""

from __future__ import annotations

app_name = "fabric"
urlpatterns: list = []
