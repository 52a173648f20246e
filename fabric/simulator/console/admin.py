"""The admin's fault-injection actions: fail, degrade or recover the selected elements.

Fabric's admin lists devices, links, switches, enclosures and power feeds without them (a
real fabric manager takes no injected faults); this app, when installed, adds them to the
admin classes registered for those models. Django's admin autodiscovery imports this
module after fabric's admin (INSTALLED_APPS order, and the import below), so the classes
are registered by then. Each action goes through `fabric.simulator.faults`, which
refuses a manager that is not simulated and records who injected what.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

import fabric.admin  # noqa: F401  (registers the admin classes the actions are added to)
from fabric.choices import FaultAction
from fabric.simulator.faults import FAULT_MODELS, fault_inject

FaultActionFunction = Callable[[Any, HttpRequest, QuerySet[Any]], None]


def _fault_action(action: str) -> FaultActionFunction:
    def inject(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        target_type = next(t for t, m in FAULT_MODELS.items() if m is queryset.model)
        done = 0
        for obj in queryset.select_related("manager"):
            try:
                outcome = fault_inject(
                    manager=obj.manager,
                    target_type=target_type,
                    target_id=obj.pk,
                    action=action,
                    actor=request.user,
                    remote_addr=request.META.get("REMOTE_ADDR") or None,
                    source="admin",
                )
            except ValidationError as exc:
                modeladmin.message_user(
                    request, f"{obj}: {'; '.join(exc.messages)}", messages.ERROR
                )
                continue
            if outcome.changed:
                done += 1
            else:
                modeladmin.message_user(request, outcome.sentence(), messages.INFO)
        if done:
            modeladmin.message_user(
                request,
                f"{action.capitalize()} injected on {done} {target_type.replace('_', ' ')}(s); "
                "the console shows it after the next inventory sync.",
                messages.SUCCESS,
            )

    inject.__name__ = f"inject_{action}"
    # What @admin.action(description=...) sets, for an action built at run time.
    inject.short_description = f"Inject fault: {action}"  # type: ignore[attr-defined]
    return inject


FAULT_ACTIONS = [_fault_action(a) for a in FaultAction.values]


def fault_actions_add(site: admin.AdminSite = admin.site) -> None:
    """Add the fault actions to the admin class of every model a fault can be aimed at
    (idempotent: an action already there by name is not added twice)."""
    for model in FAULT_MODELS.values():
        model_admin = site.get_model_admin(model)
        admin_class = type(model_admin)
        present = {getattr(action, "__name__", action) for action in admin_class.actions or ()}
        admin_class.actions = [
            *(admin_class.actions or ()),
            *(action for action in FAULT_ACTIONS if action.__name__ not in present),
        ]


fault_actions_add()
