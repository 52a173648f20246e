"""The buttons of a held composition's page: "Apply now" (compose what it holds) and
"Release hold" (give the devices back).

Both are POST forms with the CSRF token, for operators and the tenant's members who are
not read-only (a read-only member gets 403, another tenant 404, as every composition
write), and go through the services the API's apply and release actions use
(`composer.services.holds`), so each is audited the same way. A hold that is no longer
held (applied, released or lapsed meanwhile) is a message on the page saying so, not an
error page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_POST

from composer.errors import ComposerError
from composer.models import Composition
from composer.services.holds import composition_hold_apply, composition_hold_release
from composer.views.compositions import can_write
from fabric.views.responses import htmx_redirect, remote_addr

logger = logging.getLogger(__name__)

__all__ = ["composition_hold_apply_view", "composition_hold_release_view"]


def _writable(request: HttpRequest, pk: int, doing: str) -> Composition:
    """The composition `pk` if the user may change it (404 for another tenant's, 403 for a
    read-only member)."""
    composition = get_object_or_404(Composition.objects.for_user(request.user), pk=pk)
    if not can_write(request.user, composition):
        raise PermissionDenied(f"Read-only members cannot {doing} holds.")
    return composition


def _back(request: HttpRequest, composition: Composition) -> HttpResponse:
    return htmx_redirect(request, reverse("composer:composition_detail", args=[composition.pk]))


def _act(
    request: HttpRequest, pk: int, doing: str, act: Callable[[Composition], str]
) -> HttpResponse:
    """Do `act` to the hold `pk` (it returns the success message): a refusal is an error
    message in the service's words; back to the composition's page either way."""
    composition = get_object_or_404(Composition.objects.for_user(request.user), pk=pk)
    if not can_write(request.user, composition):
        raise PermissionDenied(f"Read-only members cannot {doing} holds.")
    try:
        done = act(composition)
    except ComposerError as exc:
        messages.error(request, f"Could not {doing} the hold on {composition.name}: {exc.message}")
    else:
        messages.success(request, done)
        logger.info("hold %s: %s from the console by user_id=%s", pk, doing, request.user.pk)
    return htmx_redirect(request, reverse("composer:composition_detail", args=[composition.pk]))


@login_required
@require_POST
def composition_hold_apply_view(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Apply now": the hold is composed (its compose job queued), back to the page."""

    def apply(composition: Composition) -> str:
        job = composition_hold_apply(
            composition=composition, actor=request.user, remote_addr=remote_addr(request)
        )
        return f"Composing {composition.name} from its hold (job {job.pk})."

    return _act(request, pk, "apply", apply)


@login_required
@require_POST
def composition_hold_release_view(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Release hold": the devices it holds go back to the pools, back to the page."""

    def release(composition: Composition) -> str:
        composition_hold_release(
            composition=composition, actor=request.user, remote_addr=remote_addr(request)
        )
        return f"Released the hold on {composition.name}; its devices are free again."

    return _act(request, pk, "release", release)
