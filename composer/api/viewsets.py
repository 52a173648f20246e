"""Bases of composer's writable resources: who may write, and the viewset with writes."""

from __future__ import annotations

from typing import Any

from rest_framework import mixins
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from fabric.api.views import ReadOnlyViewSet
from fabric.permissions import is_operator


class OperatorWrites(BasePermission):
    """Everyone signed in reads; only operators write. A member writing gets 403 on what it
    can see, and (through the 404 of `get_object`) 404 on what it cannot."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in SAFE_METHODS or is_operator(request.user):
            return True
        # A detail write: decide once the object is found (or 404s).
        return (view.lookup_url_kwarg or view.lookup_field) in view.kwargs

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        return request.method in SAFE_METHODS or is_operator(request.user)


class WritableViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, mixins.DestroyModelMixin, ReadOnlyViewSet
):
    """ReadOnlyViewSet (total order) plus create, update and delete."""
