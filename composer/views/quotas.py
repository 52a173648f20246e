"""The request form's quota panel: one tenant's quotas, what it uses of each and what is
left, for the tenant picked in the form's tenant field (htmx asks again when it changes).

A tenant the viewer may not see is a 404, as every other tenant-owned page: an outsider
learns nothing, not even that the tenant exists.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from composer.selectors.quotas import quotas_of_tenant

PANEL_TEMPLATE = "composer/_quota_panel.html"


@login_required
@require_GET
def composition_quotas(request: HttpRequest) -> HttpResponse:
    """The panel for `?tenant=<id>`: 400 naming the field when it is not a tenant's id,
    404 for a tenant the viewer does not belong to (operators see every tenant's)."""
    raw = request.GET.get("tenant", "").strip()
    # isascii: str.isdigit() takes digits such as "²" that int() refuses.
    if not (raw.isascii() and raw.isdigit()):
        error = "Tenant: choose the tenant whose quotas to show."
        # `asked` is echoed as the panel's tenant so the page sees it answered what its
        # field holds, and does not ask again.
        return render(request, PANEL_TEMPLATE, {"error": error, "asked": raw}, status=400)
    entry = quotas_of_tenant(request.user, int(raw))
    if entry is None:
        raise Http404("No such tenant.")
    return render(request, PANEL_TEMPLATE, {"entry": entry})
