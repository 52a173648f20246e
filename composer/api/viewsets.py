"""Bases of composer's writable resources: who may write, and the viewset with audited writes."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Model
from rest_framework import mixins
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.serializers import BaseSerializer

from composer.services.changes import (
    audited_values,
    changed_fields,
    composer_change_record,
)
from fabric.api.views import ReadOnlyViewSet
from fabric.choices import ChangeAction
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
    """ReadOnlyViewSet (total order) plus create, update and delete, each audited.

    Every write leaves a ChangeRecord (who, the caller's address, each field before and
    after) in the transaction of the write (`composer.services.changes`)."""

    def _record(self, obj: Model, action: ChangeAction, changes: Any, **kwargs: Any) -> None:
        composer_change_record(
            obj,
            action,
            changes,
            actor=self.request.user,
            source="api",
            remote_addr=self.request.META.get("REMOTE_ADDR") or None,
            **kwargs,
        )

    def perform_create(self, serializer: BaseSerializer[Any]) -> None:
        with transaction.atomic():
            obj = serializer.save()
            after = audited_values(obj)
            self._record(
                obj, ChangeAction.ADDED, changed_fields({}, after), message="added through the API"
            )

    def perform_update(self, serializer: BaseSerializer[Any]) -> None:
        instance = serializer.instance
        assert isinstance(instance, Model)
        with transaction.atomic():
            # Validation may have set the new values on the instance already: the row as
            # stored (locked until the write commits) is what it was.
            stored = type(instance)._default_manager.select_for_update().get(pk=instance.pk)
            before = audited_values(stored)
            obj = serializer.save()
            changes = changed_fields(before, audited_values(obj))
            if changes:
                self._record(
                    obj,
                    ChangeAction.CHANGED,
                    changes,
                    message="changed through the API",
                )

    def perform_destroy(self, instance: Model) -> None:
        with transaction.atomic():
            pk, label = instance.pk, str(instance)
            before = audited_values(instance)
            instance.delete()
            self._record(
                instance,
                ChangeAction.DELETED,
                changed_fields(before, {}),
                message="deleted through the API",
                label=label,
                target_id=pk,
            )
