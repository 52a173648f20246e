"""Operator pages that change fabric managers: add, edit, enable or disable, delete, and the
"Test connection" button (of a saved manager, or of the values in the add or edit form).

Each view parses the form, calls one service of `fabric.services.managers` and renders;
a service's ValidationError comes back beside the field it names. Credentials are never
rendered back, not even after an error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from fabric.forms.managers import ManagerForm
from fabric.models import FabricManager
from fabric.services.managers import (
    ManagerInUse,
    ProbeOutcome,
    manager_build,
    manager_create,
    manager_delete,
    manager_delete_check,
    manager_set_enabled,
    manager_test_connection,
    manager_update,
)
from fabric.services.managers.input import credentials_check, stored_credentials_check
from fabric.services.managers.methods import methods_text
from fabric.views.common import operator_required

logger = logging.getLogger(__name__)


def _remote_addr(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR") or None


def _redirect(request: HttpRequest, url: str) -> HttpResponse:
    """An `HX-Redirect` for htmx, a plain 302 otherwise."""
    if request.headers.get("HX-Request") == "true":
        response = HttpResponse(status=200)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def _form_page(
    request: HttpRequest, form: ManagerForm, *, status: int = 200, probe: ProbeOutcome | None = None
) -> HttpResponse:
    for name in form.errors:
        if name in form.fields:  # outline the inputs at fault, as the messages beside them
            attrs = form.fields[name].widget.attrs
            attrs["class"] = f"{attrs.get('class', '')} is-invalid".strip()
    return render(
        request,
        "fabric/manager_form.html",
        {"form": form, "manager": form.manager, "probe": probe},
        status=status,
    )


def _submit(
    request: HttpRequest,
    form: ManagerForm,
    save: Callable[..., tuple[FabricManager, str]],
) -> HttpResponse:
    """Save a posted form through `save` (a service, returning the manager and what to tell
    the operator) and go to the manager's page; the service's errors go beside the fields."""
    if form.is_valid():
        try:
            manager, message = save(
                data=form.manager_input(),
                credentials=form.credentials_input(),
                actor=request.user,
                remote_addr=_remote_addr(request),
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, message)
            return _redirect(request, reverse("fabric:manager_detail", args=[manager.pk]))
    return _form_page(request, form, status=400)


@operator_required
def manager_create_view(request: HttpRequest) -> HttpResponse:
    """The add form. POST: add the manager and go to its page; bad input comes back as
    field errors and nothing is saved."""
    if request.method != "POST":
        return _form_page(request, ManagerForm())

    def save(**kwargs: Any) -> tuple[FabricManager, str]:
        manager = manager_create(**kwargs)
        return manager, f"Fabric manager {manager.name} added."

    return _submit(request, ManagerForm(request.POST), save)


@operator_required
def manager_edit_view(request: HttpRequest, pk: int) -> HttpResponse:
    """The edit form; blank credentials keep the stored ones."""
    manager = get_object_or_404(FabricManager, pk=pk)
    if request.method != "POST":
        return _form_page(request, ManagerForm(manager=manager))

    def save(**kwargs: Any) -> tuple[FabricManager, str]:
        changed = manager_update(manager=manager, **kwargs)
        done = f" ({', '.join(changed)} changed)." if changed else "; nothing changed."
        return manager, f"Fabric manager {manager.name} saved{done}"

    return _submit(request, ManagerForm(request.POST, manager=manager), save)


@operator_required
@require_POST
def manager_test_entered_view(request: HttpRequest) -> HttpResponse:
    """ "Test connection" on the add or edit form: probe the values entered, saving nothing.

    Answers the result partial (htmx swaps it in beside the form); input the service
    refuses is the partial with the reasons. On the edit form (`manager` posted), blank
    credentials mean the stored ones, and only for the stored endpoint's address
    (`stored_credentials_check`).
    """
    existing = None
    if "manager" in request.POST:
        # Posted by the edit form: anything but a manager's id is no manager (404, not 500).
        pk = request.POST["manager"].strip()
        if not (pk.isascii() and pk.isdigit() and len(pk) <= 18):  # a bigint, or none
            raise Http404("No such fabric manager.")
        existing = get_object_or_404(FabricManager, pk=int(pk))
    form = ManagerForm(request.POST, manager=existing)
    outcome: ProbeOutcome | None = None
    problems: list[str] = []
    if form.is_valid():
        try:
            built = manager_build(data=form.manager_input(), manager=existing)
            entered = form.credentials_input()
            if existing is not None:
                stored_credentials_check(manager=existing, endpoint=built.endpoint, entered=entered)
            if entered.clear:
                credentials: dict[str, str] | None = {}
            elif entered.is_given():
                credentials = credentials_check(entered)
            else:
                credentials = None if existing is not None else {}
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            outcome = manager_test_connection(
                manager=built,
                credentials=credentials,
                actor=request.user,
                remote_addr=_remote_addr(request),
            )
    if form.errors:
        problems = [
            f"{form[name].label}: {error}" if name in form.fields else str(error)
            for name, errors in form.errors.items()
            for error in errors
        ]
    return render(
        request,
        "fabric/_manager_probe.html",
        {"probe": outcome, "problems": problems},
        status=200 if outcome is not None else 400,
    )


@operator_required
@require_POST
def manager_test_view(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Test connection" on a manager's page: probe it with what is stored."""
    manager = get_object_or_404(FabricManager, pk=pk)
    outcome = manager_test_connection(
        manager=manager, actor=request.user, remote_addr=_remote_addr(request)
    )
    if request.headers.get("HX-Request") == "true":
        return render(request, "fabric/_manager_probe.html", {"probe": outcome})
    if outcome.ok:
        composes = methods_text(outcome.composition_methods)
        messages.success(
            request,
            f"Connection test of {manager.name}: {outcome.summary()}"
            + (f"; composes by {composes}." if composes else "."),
        )
    else:
        messages.error(request, f"Connection test of {manager.name} {outcome.summary()}")
    return redirect("fabric:manager_detail", pk=manager.pk)


@operator_required
@require_POST
def manager_enabled_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Enable (`enabled=1`) or disable (`enabled=0`) a manager."""
    manager = get_object_or_404(FabricManager, pk=pk)
    value = request.POST.get("enabled", "")
    if value not in ("0", "1"):
        messages.error(request, "Say whether to enable or disable the manager.")
        return redirect("fabric:manager_detail", pk=manager.pk)
    enabled = value == "1"
    changed = manager_set_enabled(
        manager=manager, enabled=enabled, actor=request.user, remote_addr=_remote_addr(request)
    )
    word = "enabled" if enabled else "disabled"
    messages.success(
        request,
        f"Fabric manager {manager.name} {word}."
        if changed
        else f"Fabric manager {manager.name} already was {word}.",
    )
    return _redirect(request, reverse("fabric:manager_detail", args=[manager.pk]))


@operator_required
def manager_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what deleting would remove, or why it is refused (with a Disable button).
    POST: delete, and go back to the list."""
    manager = get_object_or_404(FabricManager, pk=pk)
    if request.method == "POST":
        name = manager.name
        try:
            manager_delete(manager=manager, actor=request.user, remote_addr=_remote_addr(request))
        except ManagerInUse as exc:
            return render(
                request,
                "fabric/manager_delete.html",
                {
                    "manager": manager,
                    "check": manager_delete_check(manager=manager),
                    "refusal": exc.message,
                },
                status=409,
            )
        messages.success(request, f"Fabric manager {name} deleted.")
        return _redirect(request, reverse("fabric:manager_list"))
    check = manager_delete_check(manager=manager)
    return render(
        request,
        "fabric/manager_delete.html",
        {"manager": manager, "check": check, "refusal": check.refusal},
    )
