"""The forms of the notification pages: add and change routes and webhooks, delete them,
and silence (from an alert's row or from scratch).

Each view parses its form and calls one service (`composer.notifications`), which checks
and writes, audited; a service's error is shown next to the field it names, with status
400. Owners offered are the ones the viewer manages: the operators' own and every tenant's
for operators, its tenants for a tenant's admin.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from composer.errors import ComposerError
from composer.forms.notifications import RouteForm, SilenceForm, WebhookForm, errors_to_form
from composer.models import NotificationRoute, Webhook
from composer.notifications import (
    can_manage,
    can_manage_any,
    manageable_tenants,
    route_create,
    route_delete,
    route_update,
    routes_for,
    silence_create,
    webhook_create,
    webhook_delete,
    webhook_update,
    webhooks_for,
)
from composer.views.notifications import actor_of
from fabric.models import Alert
from fabric.permissions import is_operator
from fabric.services.alerts import alerts_visible_to

__all__ = [
    "route_create_view",
    "route_delete_view",
    "route_edit_view",
    "silence_create_view",
    "webhook_create_view",
    "webhook_delete_view",
    "webhook_edit_view",
]

FORM = "composer/notifications/form.html"


def _owners(request: HttpRequest) -> dict[str, Any]:
    if not can_manage_any(request.user):
        raise PermissionDenied("Only operators and tenant admins manage notifications.")
    return {"tenants": manageable_tenants(request.user), "operator": is_operator(request.user)}


def _managed(request: HttpRequest, queryset: Any, pk: int) -> Any:
    row = get_object_or_404(queryset, pk=pk)
    if not can_manage(request.user, row.tenant_id):
        raise PermissionDenied("Only operators and the tenant's admins change its notifications.")
    return row


def _form_page(
    request: HttpRequest, form: Any, *, tab: str, title: str, status: int = 200, **extra: Any
) -> HttpResponse:
    return render(request, FORM, {"form": form, "tab": tab, "title": title, **extra}, status=status)


def _manageable_webhooks(request: HttpRequest) -> Any:
    hooks = webhooks_for(request.user).order_by("tenant__name", "name")
    if is_operator(request.user):
        return hooks
    return hooks.filter(tenant__in=manageable_tenants(request.user))


# --- routes -----------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def route_create_view(request: HttpRequest) -> HttpResponse:
    owners = _owners(request)
    hooks = _manageable_webhooks(request)
    form = RouteForm(request.POST or None, webhooks=hooks, **owners)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            route = route_create(
                tenant=form.owner_tenant(),
                name=data["name"],
                min_severity=data["min_severity"],
                rules=data["rules"],
                source_types=data["source_types"],
                on_close=data["on_close"],
                emails=data["emails"],
                webhook=data["webhook"],
                is_enabled=data["is_enabled"],
                actor=actor_of(request),
            )
        except ValidationError as exc:
            errors_to_form(form, exc)
        else:
            messages.success(request, f"Route {route.name} added.")
            return redirect("composer:route_list")
    status = 400 if request.method == "POST" else 200
    return _form_page(request, form, tab="routes", title="Add a notification route", status=status)


@login_required
@require_http_methods(["GET", "POST"])
def route_edit_view(request: HttpRequest, pk: int) -> HttpResponse:
    route: NotificationRoute = _managed(request, routes_for(request.user), pk)
    hooks = _manageable_webhooks(request).filter(tenant_id=route.tenant_id)
    initial = {
        "name": route.name,
        "min_severity": route.min_severity,
        "rules": route.rules,
        "source_types": route.source_types,
        "emails": "\n".join(route.emails),
        "webhook": route.webhook_id,
        "on_close": route.on_close,
        "is_enabled": route.is_enabled,
    }
    form = RouteForm(
        request.POST or None, initial=initial, webhooks=hooks, editing=True, **_owners(request)
    )
    if request.method == "POST" and form.is_valid():
        changes = {
            name: form.cleaned_data[name]
            for name in (
                "name",
                "min_severity",
                "rules",
                "source_types",
                "emails",
                "webhook",
                "on_close",
                "is_enabled",
            )
        }
        try:
            route_update(route=route, changes=changes, actor=actor_of(request))
        except ValidationError as exc:
            errors_to_form(form, exc)
        else:
            messages.success(request, f"Route {changes['name']} saved.")
            return redirect("composer:route_list")
    status = 400 if request.method == "POST" else 200
    return _form_page(
        request, form, tab="routes", title=f"Edit {route.name}", status=status, route=route
    )


@login_required
@require_http_methods(["GET", "POST"])
def route_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    route: NotificationRoute = _managed(request, routes_for(request.user), pk)
    if request.method == "POST":
        route_delete(route=route, actor=actor_of(request))
        messages.success(request, f"Route {route.name} deleted.")
        return redirect("composer:route_list")
    return render(
        request,
        "composer/notifications/delete.html",
        {"tab": "routes", "thing": route, "noun": "route", "back": "composer:route_list"},
    )


# --- webhooks ---------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def webhook_create_view(request: HttpRequest) -> HttpResponse:
    form = WebhookForm(request.POST or None, **_owners(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            hook, made = webhook_create(
                tenant=form.owner_tenant(),
                name=data["name"],
                url=data["url"],
                secret=data["secret"] or None,
                is_enabled=data["is_enabled"],
                actor=actor_of(request),
            )
        except ValidationError as exc:
            errors_to_form(form, exc)
        else:
            if made is None:
                messages.success(request, f"Webhook {hook.name} added, with the secret you gave.")
                return redirect("composer:webhook_detail", pk=hook.pk)
            # The secret made for it is shown in this answer and nowhere else, ever.
            response = render(
                request,
                "composer/notifications/webhook_secret.html",
                {"tab": "webhooks", "hook": hook, "secret": made, "rotated": False},
                status=201,
            )
            response["Cache-Control"] = "no-store"
            return response
    status = 400 if request.method == "POST" else 200
    return _form_page(request, form, tab="webhooks", title="Add a webhook", status=status)


@login_required
@require_http_methods(["GET", "POST"])
def webhook_edit_view(request: HttpRequest, pk: int) -> HttpResponse:
    hook: Webhook = _managed(request, webhooks_for(request.user), pk)
    initial = {"name": hook.name, "url": hook.url, "is_enabled": hook.is_enabled}
    form = WebhookForm(request.POST or None, initial=initial, editing=True, **_owners(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            webhook_update(
                webhook=hook,
                name=data["name"],
                url=data["url"],
                is_enabled=data["is_enabled"],
                secret=data["secret"] or None,
                actor=actor_of(request),
            )
        except ValidationError as exc:
            errors_to_form(form, exc)
        else:
            messages.success(request, f"Webhook {data['name']} saved.")
            return redirect("composer:webhook_detail", pk=hook.pk)
    status = 400 if request.method == "POST" else 200
    return _form_page(
        request, form, tab="webhooks", title=f"Edit {hook.name}", status=status, hook=hook
    )


@login_required
@require_http_methods(["GET", "POST"])
def webhook_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    hook: Webhook = _managed(request, webhooks_for(request.user), pk)
    refusal = ""
    if request.method == "POST":
        try:
            webhook_delete(webhook=hook, actor=actor_of(request))
        except ComposerError as exc:
            refusal = exc.message
        else:
            messages.success(request, f"Webhook {hook.name} deleted.")
            return redirect("composer:webhook_list")
    return render(
        request,
        "composer/notifications/delete.html",
        {
            "tab": "webhooks",
            "thing": hook,
            "noun": "webhook",
            "back": "composer:webhook_list",
            "refusal": refusal,
            "note": "Its delivery log is deleted with it; the audit keeps who deleted it.",
        },
        status=409 if refusal else 200,
    )


# --- silences ---------------------------------------------------------------------------------


def _alert_of(request: HttpRequest, value: Any) -> Alert | None:
    """The alert named by `?alert=` or the form, which the viewer must see (else 404)."""
    if value in (None, ""):
        return None
    try:
        pk = int(str(value))
    except ValueError:
        raise Http404("No such alert.") from None
    return get_object_or_404(alerts_visible_to(request.user), pk=pk)


@login_required
@require_http_methods(["GET", "POST"])
def silence_create_view(request: HttpRequest) -> HttpResponse:
    """Silence a rule, an element or both for a stated time; from an alert's row
    (`?alert=<id>`) the choice is among that alert's rule and element."""
    # The alert first: one the viewer may not see is a 404 whoever asks.
    alert = _alert_of(request, request.POST.get("alert") or request.GET.get("alert"))
    owners = _owners(request)
    initial: dict[str, Any] = {}
    if alert is not None:
        initial["alert"] = alert.pk
        initial["match"] = request.GET.get("match") or "both"
        if not owners["operator"]:
            # A tenant admin's silence is for the tenant the alert hurt.
            hurt = owners["tenants"].filter(alert_audience__alert=alert).first()
            if hurt is not None:
                initial["owner"] = hurt.slug
    form = SilenceForm(request.POST or None, initial=initial, from_alert=alert, **owners)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        match = data.get("match") or "both"
        try:
            silence = silence_create(
                tenant=form.owner_tenant(),
                reason=data["reason"],
                duration=timedelta(hours=data["hours"]),
                rule=(
                    alert.rule
                    if alert is not None and match in ("both", "rule")
                    else data.get("rule") or ""
                ),
                alert=alert,
                match_element=alert is not None and match in ("both", "element"),
                source_type=data.get("source_type") or "",
                source_id=data.get("source_id"),
                actor=actor_of(request),
            )
        except ValidationError as exc:
            errors_to_form(form, exc)
        else:
            messages.success(request, f"{silence} until {silence.ends_at:%Y-%m-%d %H:%M %Z}.")
            return redirect("composer:silence_list")
    status = 400 if request.method == "POST" else 200
    return _form_page(request, form, tab="silences", title="Silence", status=status, alert=alert)
