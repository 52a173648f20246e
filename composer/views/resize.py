"""The resize card of a composition's page: its form, "Preview" (the plan, drawn into the
card by htmx, nothing held) and "Resize" (the job queued, back to the page, which shows
the job's progress live as compose does).

The card is its own partial, loaded with the page and asked for again on every event about
the composition (live.js), with the version it shows (the composition's state and what it
holds): while that is still true the answer is 204 and nothing is redrawn, so what someone
is typing stays; once it changed, the card comes back as it is now (the form while the
composition is ready, nothing while it is not). It is for
operators and the tenant's members who are not read-only (a read-only member gets the
card without the form and 403 on a POST, another tenant 404), and goes through
`composer.services.resize`, as the API does.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from composer.choices import CompositionState
from composer.errors import ComposerError
from composer.forms.resize import ResizeForm
from composer.models import Allocation, Composition
from composer.placement.audience import plan_for
from composer.services.resize import ResizeRejected, resize_preview, resize_request
from composer.views.compositions import can_write
from fabric.kinds import label, plural, requestable, shares_per_device
from fabric.models import Device
from fabric.permissions import is_operator
from fabric.views.responses import htmx_redirect, remote_addr

logger = logging.getLogger(__name__)

__all__ = ["card_version", "composition_resize", "composition_resize_preview", "spec_words"]

CARD = "composer/_composition_resize.html"


def spec_words(spec: dict[str, Any]) -> str:
    """A request in a sentence, for "afterwards it holds": "2 GPUs (H100 PCIe 80GB), a
    250/1000 share of a GPU, 256 GiB of CXL memory"."""
    parts = []
    for item in spec.get("items") or []:
        model = f" ({item['model']})" if item.get("model") else ""
        if item.get("share"):
            whole = shares_per_device(item["kind"])
            parts.append(f"a {item['share']}/{whole} share of a {label(item['kind'])}{model}")
        else:
            what = label(item["kind"]) if item["count"] == 1 else plural(item["kind"])
            parts.append(f"{item['count']} {what}{model}")
    parts += [str(pin.get("device")) for pin in spec.get("devices") or []]
    if spec.get("memory_gib"):
        parts.append(f"{spec['memory_gib']:,} GiB of CXL memory")
    if spec.get("storage_tb"):
        parts.append(f"{spec['storage_tb']:g} TB of NVMe")
    return ", ".join(parts) or "nothing"


def _composition(request: HttpRequest, pk: int) -> Composition:
    return get_object_or_404(
        Composition.objects.for_user(request.user).select_related("tenant", "host"), pk=pk
    )


def _held(composition: Composition) -> list[Allocation]:
    return list(
        composition.allocations.filter(released_at__isnull=True)
        .select_related("device")
        .order_by("pk")
    )


def card_version(composition: Composition, held: list[Allocation]) -> str:
    """What a card shows depends on: the state, and the devices held (the choices)."""
    return f"{composition.state}:{'-'.join(str(a.pk) for a in held)}"


def _form(composition: Composition, data: Any = None) -> ResizeForm:
    return ResizeForm(data, allocations=_held(composition))


def _card(
    request: HttpRequest,
    composition: Composition,
    form: ResizeForm | None,
    *,
    plan: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The card: the form when the composition is ready and the user may change it, else
    the empty placeholder that a later event redraws."""
    # A form sent back with its errors is shown whatever the state: it says why.
    shown = (
        form is not None
        and (composition.state == CompositionState.READY or form.is_bound)
        and can_write(request.user, composition)
    )
    if form is not None and form.is_bound:
        form.mark_invalid()
    context = {
        "composition": composition,
        "version": card_version(composition, _held(composition)),
        "form": form if shown else None,
        "plan": plan,
        "models": (
            Device.objects.exclude(model="")
            .filter(kind__in=requestable())
            .order_by("model")
            .values_list("model", flat=True)
            .distinct()
            if shown
            else []
        ),
    }
    return render(request, CARD, context, status=status)


def _shown(request: HttpRequest, plan: dict[str, Any]) -> dict[str, Any]:
    """A resize's stored plan in the reader's words, with the request once resized."""
    shown = plan_for(plan, operator=is_operator(request.user))
    shown["after"] = spec_words(plan.get("spec") or {}) if plan.get("spec") else ""
    for key in ("devices", "memory", "remove"):
        shown[key] = [
            {**p, "parts": shares_per_device(kind), "what": label(kind)}
            for p in shown.get(key) or []
            for kind in [str(p.get("kind") or "")]
        ]
    return shown


def _writable(request: HttpRequest, composition: Composition) -> None:
    if not can_write(request.user, composition):
        raise PermissionDenied("Read-only members cannot resize compositions.")


@login_required
def composition_resize(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the card (what the page loads, and redraws on events). POST, "Resize": queue
    the resize and go back to the page; bad input, a composition no longer ready or a
    resize that does not fit comes back as the card with the reason beside the field, or
    above the form with the rejection, and nothing is claimed."""
    composition = _composition(request, pk)
    if request.method != "POST":
        if request.GET.get("v") == card_version(composition, _held(composition)):
            return HttpResponse(status=204)  # what the card shows is still true: keep it
        return _card(request, composition, _form(composition))
    _writable(request, composition)
    form = _form(composition, request.POST)
    if form.is_valid():
        try:
            job = resize_request(
                composition=composition,
                add=form.add(),
                remove=form.remove_ids(),
                requested_by=request.user,
                remote_addr=remote_addr(request),
                source="console",
            )
        except ResizeRejected as exc:
            form.add_error(None, f"Nothing was resized: {exc.message}")
            return _card(request, composition, form, plan=_shown(request, exc.plan), status=400)
        except ComposerError as exc:
            form.add_composer_error(exc)
        else:
            logger.info("composition %s resize queued from the console as job %s", pk, job.pk)
            messages.success(request, f"Resizing {composition.name} (job {job.pk}).")
            return htmx_redirect(request, reverse("composer:composition_detail", args=[pk]))
    composition.refresh_from_db(fields=["state"])
    return _card(request, composition, form, status=400)


@login_required
@require_POST
def composition_resize_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Preview": the plan the resize would get now, drawn under the form; nothing is
    held. Bad input redraws the card with the errors beside the fields."""
    composition = _composition(request, pk)
    _writable(request, composition)
    form = _form(composition, request.POST)
    if form.is_valid():
        try:
            plan = resize_preview(composition=composition, add=form.add(), remove=form.remove_ids())
        except ComposerError as exc:
            form.add_composer_error(exc)
        else:
            return render(request, "composer/_resize_preview.html", {"plan": _shown(request, plan)})
    composition.refresh_from_db(fields=["state"])
    response = _card(request, composition, form, status=400)
    response["HX-Retarget"] = "#composition-resize"
    response["HX-Reswap"] = "outerHTML"
    return response
