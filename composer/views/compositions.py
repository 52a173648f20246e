"""Composition pages: the request form with its preview, one composition's page (polled
while it changes) and its decompose action (the list: `composer.views.composition_list`).

Reads start from `Composition.objects.for_user`: another tenant's composition is
a 404; a read-only member gets 403 on every write (the request form, preview, decompose).
Forms post with htmx and get back the form with its errors, or an `HX-Redirect`.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from composer.choices import TERMINAL_JOB_STATUSES, CompositionState, Role
from composer.errors import ComposerError
from composer.forms.compositions import CompositionRequestForm
from composer.models import Composition, Job, KubernetesClaim, Membership, Template, Tenant
from composer.placement.audience import plan_for
from composer.selectors.health import composition_device_status
from composer.selectors.jobs import job_log
from composer.selectors.quotas import quotas_of_tenant
from composer.services.compositions import (
    COMPOSITION_TARGET,
    composition_decompose,
    composition_preview,
    composition_request,
    placement_as_dict,
)
from composer.services.heal import heal_request
from fabric.kinds import requestable
from fabric.models import Device
from fabric.permissions import is_operator
from fabric.views.responses import htmx_redirect, is_htmx, remote_addr

logger = logging.getLogger(__name__)

LOG_LINES_SHOWN = 200
# States a composition stays in until someone acts: the page stops polling there.
SETTLED_STATES = frozenset(
    {
        CompositionState.READY,
        CompositionState.HELD,  # changes only by apply, release or the sweep: all heard live
        CompositionState.RELEASED,
        CompositionState.FAILED,
        CompositionState.REJECTED,
    }
)


# --- who may do what ---------------------------------------------------------------------


def writable_tenants(user: Any) -> QuerySet[Tenant]:
    """The tenants `user` may request compositions for: every active one for operators, else
    those where the user is a member who is not read-only."""
    tenants = Tenant.objects.filter(is_active=True).order_by("name")
    if is_operator(user):
        return tenants
    if not user.is_authenticated:
        return tenants.none()
    return tenants.filter(
        pk__in=Membership.objects.filter(user=user).exclude(role=Role.READONLY).values("tenant")
    )


def can_write(user: Any, composition: Composition) -> bool:
    """Operators, and members of the composition's tenant who are not read-only."""
    if is_operator(user):
        return True
    return (
        Membership.objects.filter(user=user, tenant_id=composition.tenant_id)
        .exclude(role=Role.READONLY)
        .exists()
    )


# --- the request form and its preview ------------------------------------------------------


def _form_context(
    request: HttpRequest, form: CompositionRequestForm | None, *, action: str = "request"
) -> dict[str, Any]:
    """The form page's (or partial's) context; `action` is the button that was pressed,
    so that a preview's errors do not say that nothing was requested."""
    if form is not None and form.is_bound:
        form.mark_invalid()
    return {
        "form": form,
        "action": action,
        "device_models": (
            Device.objects.exclude(model="")
            .filter(kind__in=requestable())  # the kinds asked for as items, not in GiB
            .order_by("model")
            .values_list("model", flat=True)
            .distinct()
        ),
        "template_specs": form.template_specs() if form is not None else {},
    }


@login_required
def composition_create(request: HttpRequest) -> HttpResponse:
    """The request form. GET: the form (or, for read-only members, a notice). POST: create
    via `composition_request` and go to the composition's page; bad input comes back as
    field errors and creates nothing."""
    tenants = writable_tenants(request.user)
    operator = is_operator(request.user)
    if request.method == "POST":
        if not tenants.exists():
            raise PermissionDenied("Read-only members cannot request compositions.")
        form = CompositionRequestForm(request.POST, tenants=tenants, operator=operator)
        if form.is_valid():
            try:
                composition = composition_request(
                    tenant=form.cleaned_data["tenant"],
                    requested_by=request.user,
                    spec=form.spec(),
                    name=form.cleaned_data["name"],
                    template=form.cleaned_data["template"],
                    idempotency_key=form.cleaned_data["idempotency_key"] or None,
                    remote_addr=remote_addr(request),
                )
            except ComposerError as exc:
                form.add_composer_error(exc)
            else:
                logger.info("composition %s requested from the form", composition.pk)
                return htmx_redirect(
                    request, reverse("composer:composition_detail", args=[composition.pk])
                )
        if is_htmx(request):  # the form alone: the quota panel beside it stays
            return render(
                request, "composer/_composition_form.html", _form_context(request, form), status=400
            )
        return render(
            request, "composer/composition_form.html", _page_context(request, form), status=400
        )
    blank, template_error = None, ""
    if tenants.exists():  # read-only members get a notice, whatever template is asked for
        picked, template_error = _picked_template(request)
        initial: dict[str, Any] = {}
        if picked is not None:  # "Request" on the templates page: that template, its default
            initial = {"template": picked.pk, "self_heal": bool(picked.spec.get("self_heal"))}
        blank = CompositionRequestForm(tenants=tenants, operator=operator, initial=initial)
    context = {**_page_context(request, blank), "template_error": template_error}
    return render(
        request, "composer/composition_form.html", context, status=400 if template_error else 200
    )


def _picked_template(request: HttpRequest) -> tuple[Template | None, str]:
    """The active template `?template=<slug>` picks for a blank form, or the error naming it
    (the form is still drawn, with no template picked)."""
    slug = request.GET.get("template", "").strip()
    if not slug:
        return None, ""
    template = Template.objects.filter(is_active=True, slug=slug).first()
    if template is None:
        return None, f"No active template “{slug[:60]}” to request from: pick one here."
    return template, ""


def _page_context(request: HttpRequest, form: CompositionRequestForm | None) -> dict[str, Any]:
    """The whole page's context: the form's, and the quota panel of the tenant it shows
    picked (the one sent, else the first offered: what the tenant field shows selected)."""
    context = _form_context(request, form)
    if form is not None:
        tenant = form.shown_tenant()
        context["quota_entry"] = quotas_of_tenant(request.user, tenant.pk) if tenant else None
    return context


@login_required
@require_POST
def composition_preview_view(request: HttpRequest) -> HttpResponse:
    """The "Preview" button: the plan (or the rejection) the request would get now, as a
    partial; nothing is written. Bad input re-draws the form with its field errors."""
    tenants = writable_tenants(request.user)
    if not tenants.exists():
        raise PermissionDenied("Read-only members cannot request compositions.")
    form = CompositionRequestForm(request.POST, tenants=tenants, operator=is_operator(request.user))
    # The name is not needed to preview.
    form.fields["name"].required = False
    if form.is_valid():
        try:
            outcome = composition_preview(
                tenant=form.cleaned_data["tenant"], spec=form.preview_spec()
            )
        except ComposerError as exc:
            form.add_composer_error(exc)
        else:
            plan = plan_for(placement_as_dict(outcome), operator=is_operator(request.user))
            return render(
                request, "composer/_composition_preview.html", {"plan": plan, "is_preview": True}
            )
    response = render(
        request,
        "composer/_composition_form.html",
        _form_context(request, form, action="preview"),
        status=400,
    )
    response["HX-Retarget"] = "#composition-form"
    response["HX-Reswap"] = "outerHTML"
    return response


# --- one composition -----------------------------------------------------------------------


def _composition_context(request: HttpRequest, pk: int) -> dict[str, Any]:
    composition = get_object_or_404(
        Composition.objects.for_user(request.user).select_related(
            "tenant", "host", "template", "requested_by"
        ),
        pk=pk,
    )
    allocations = list(
        composition.allocations.select_related("device").order_by("released_at", "pk")
    )
    operator = is_operator(request.user)
    plan = plan_for(composition.placement, operator=operator)
    paths = {p["device"]: p for p in (plan.get("devices") or []) + (plan.get("memory") or [])}
    # Each held device's health and reach now, not as placed: the table must not say Bound
    # at 298 ns about a GPU its host can no longer reach.
    status = composition_device_status(composition) if composition.host_id else {}
    rows = [
        {
            "allocation": a,
            "path": paths.get(f"device:{a.device_id}", {}),
            "status": status.get(a.pk),
        }
        for a in allocations
    ]
    job = (
        Job.objects.for_user(request.user)
        .filter(target_type=COMPOSITION_TARGET, target_id=composition.pk)
        .order_by("-created_at", "-id")
        .first()
    )
    log_lines: list[Any] = []
    if job is not None:
        log_lines = job_log(job=job, operator=operator, last=LOG_LINES_SHOWN).lines
    job_finished = job is None or job.status in TERMINAL_JOB_STATUSES
    return {
        "composition": composition,
        # The ResourceClaim it was made for, when the Kubernetes controller made it.
        "kubernetes_claim": KubernetesClaim.objects.filter(composition=composition).first(),
        "rows": rows,
        "plan": plan,
        "history": list(composition.state_changes.select_related("actor").order_by("at", "id")),
        "job": job,
        "log_lines": log_lines,
        "is_settled": composition.state in SETTLED_STATES and job_finished,
        "can_write": can_write(request.user, composition),
        "can_decompose": composition.state in (CompositionState.READY, CompositionState.DEGRADED),
        "can_heal": composition.state == CompositionState.DEGRADED,
        "unbind_pending": list(
            composition.unbinds_pending.filter(undone_at__isnull=True).select_related("device")
        ),
        "self_heal_overrides_template": composition.template is not None
        and bool((composition.template.spec or {}).get("self_heal"))
        != bool((composition.spec or {}).get("self_heal")),
    }


@login_required
def composition_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One composition: state, host, devices and paths, the plan, history and current job;
    the live part polls every 2 s until the composition settles."""
    return render(request, "composer/composition_detail.html", _composition_context(request, pk))


@login_required
def composition_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The part of the composition page that changes (what htmx polls)."""
    return render(request, "composer/_composition_live.html", _composition_context(request, pk))


@login_required
@require_POST
def composition_decompose_view(request: HttpRequest, pk: int) -> HttpResponse:
    """The confirmed "Decompose" button: queue the decompose job, back to the page."""
    composition = get_object_or_404(Composition.objects.for_user(request.user), pk=pk)
    if not can_write(request.user, composition):
        raise PermissionDenied("Read-only members cannot decompose compositions.")
    try:
        job = composition_decompose(
            composition=composition, actor=request.user, remote_addr=remote_addr(request)
        )
    except ComposerError as exc:
        messages.error(request, f"Could not decompose {composition.name}: {exc.message}")
    else:
        messages.success(request, f"Decomposing {composition.name} (job {job.pk}).")
    return htmx_redirect(request, reverse("composer:composition_detail", args=[composition.pk]))


@login_required
@require_POST
def composition_heal_view(request: HttpRequest, pk: int) -> HttpResponse:
    """The "Heal now" button of a degraded composition: queue the heal job, back to the
    page (which then shows the job's progress and log); a composition whose losses have
    cleared meanwhile is simply ready again."""
    composition = get_object_or_404(Composition.objects.for_user(request.user), pk=pk)
    if not can_write(request.user, composition):
        raise PermissionDenied("Read-only members cannot heal compositions.")
    try:
        job = heal_request(
            composition=composition, actor=request.user, remote_addr=remote_addr(request)
        )
    except ComposerError as exc:
        messages.error(request, f"Could not heal {composition.name}: {exc.message}")
    else:
        if composition.state == CompositionState.READY:
            messages.success(
                request,
                f"{composition.name} is ready again: every device it lost is back, "
                "so there was nothing to replace.",
            )
        else:
            messages.success(request, f"Healing {composition.name} (job {job.pk}).")
    return htmx_redirect(request, reverse("composer:composition_detail", args=[composition.pk]))
