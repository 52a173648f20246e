"""URL routes."""

from __future__ import annotations

app_name = "composer"
urlpatterns: list = []
