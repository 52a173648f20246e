"""Operator pages of the fabric as a graph: the interactive topology, the failure domains, and
what-if (the blast radius of several domains failing together). Tenant members get 404.

The topology page is drawn in the browser (static/js/topology.js) from the same JSON the API
serves; these views only parse the address, fill the filters and link the endpoints. The
what-if page renders the report of `fabric.selectors.failure_domain_impact`, the selector the
API's impact endpoints use, so page and API cannot disagree.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse

from fabric.choices import FailureDomainKind
from fabric.filters import FailureDomainFilterSet
from fabric.forms import BadIds, parse_domain_ids
from fabric.models import FabricManager, FailureDomain, Rack
from fabric.selectors import failure_domain_impact
from fabric.views.common import BadPage, operator_required, paginate
from fabric.views.listing import (
    Column,
    attr,
    export_query,
    export_response,
    headers,
    list_errors,
)

DOMAIN_PAGE_SIZE = 100


def _domain_kinds() -> list[tuple[str, str]]:
    return [(str(v), str(label)) for v, label in FailureDomainKind.choices]


def _api_urls() -> dict[str, str]:
    return {
        "topology": reverse("api:topology"),
        "domains": reverse("api:failure_domain_list"),
        "impact": reverse("api:failure_domain_what_if"),
        "paths": reverse("api:paths"),
    }


def _optional_pk(request: HttpRequest, name: str, errors: list[str]) -> int | None:
    value = request.GET.get(name, "")
    if value == "":
        return None
    if not (value.isascii() and value.isdigit()):
        errors.append(f"{name}: {value!r} is not an id.")
        return None
    return int(value)


@operator_required
def topology(request: HttpRequest) -> HttpResponse:
    """The fabric drawn as a graph, with paths, reachability and blast radius on demand.

    `?manager=<id>&rack=<id>&collapse=true|false` preselect the filters and
    `?domains=1,2` shows those failure domains' blast radius once the graph is drawn.
    A malformed value is a 400 naming it (the page still draws, unfiltered).
    """
    errors: list[str] = []
    managers = list(FabricManager.objects.order_by("name", "pk"))
    racks = list(Rack.objects.select_related("manager").order_by("manager__name", "name", "pk"))
    selected: dict[str, Any] = {
        "manager": _optional_pk(request, "manager", errors),
        "rack": _optional_pk(request, "rack", errors),
        "collapse": request.GET.get("collapse", ""),
    }
    if selected["manager"] is not None and selected["manager"] not in {m.pk for m in managers}:
        errors.append(f"manager: there is no fabric manager {selected['manager']}.")
    if selected["rack"] is not None and selected["rack"] not in {r.pk for r in racks}:
        errors.append(f"rack: there is no rack {selected['rack']}.")
    if selected["collapse"] not in ("", "auto", "true", "false"):
        errors.append(f"collapse: {selected['collapse']!r} is not one of auto, true, false.")
        selected["collapse"] = ""
    if selected["collapse"] == "auto":
        selected["collapse"] = ""
    if request.GET.get("domains"):
        try:
            parse_domain_ids(request.GET.getlist("domains"))
        except BadIds as exc:
            errors.append(f"domains: {exc}")
    context = {
        "managers": managers,
        "racks": racks,
        "selected": selected,
        "errors": errors,
        "domain_kinds": _domain_kinds(),
        "api": _api_urls(),
    }
    return render(request, "fabric/topology.html", context, status=400 if errors else 200)


DOMAIN_COLUMNS = (
    Column("Name", "name", attr("name"), sort="name"),
    Column("Kind", "kind", attr("kind"), sort="kind"),
    Column("Key", "key", attr("key")),
    Column("Fabric manager", "manager", attr("manager.name")),
    Column("Devices lost", "devices_lost", attr("device_count"), sort="devices", numeric=True),
    Column("Hosts lost", "hosts_lost", attr("host_count"), sort="hosts", numeric=True),
    Column(
        "Devices degraded",
        "devices_degraded",
        attr("devices_degraded_count"),
        sort="devices_degraded",
        numeric=True,
    ),
    Column(
        "Hosts degraded",
        "hosts_degraded",
        attr("hosts_degraded_count"),
        sort="hosts_degraded",
        numeric=True,
    ),
)


@operator_required
def failure_domain_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every failure domain with how many devices and hosts it holds; tick some and ask
    what happens if they fail together."""
    queryset = FailureDomain.objects.select_related("manager").order_by("kind", "name", "pk")
    filterset = FailureDomainFilterSet(request.GET, queryset=queryset, request=request)
    errors = list_errors(filterset.form, request)
    status = 400 if errors else 200
    page = None
    if status == 200:
        rows = filterset.qs
        rows = rows.order_by(*(rows.query.order_by or ("kind", "name")), "pk")
        export = request.GET.get("export")
        if export:
            return export_response(rows, DOMAIN_COLUMNS, export=export, filename="failure-domains")
        try:
            page = paginate(rows, page=request.GET.get("page"), per_page=DOMAIN_PAGE_SIZE)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
    context = {
        "page": page,
        "errors": errors,
        "kinds": _domain_kinds(),
        "kind": request.GET.get("kind", ""),
        "q": request.GET.get("q", ""),
        "is_filtered": bool(request.GET.get("kind") or request.GET.get("q")),
        "headers": headers(DOMAIN_COLUMNS, request.GET.get("ordering", ""), default="kind"),
        "export_query": export_query(request),
    }
    return render(request, "fabric/failure_domain_list.html", context, status=status)


@operator_required
def failure_domain_what_if(request: HttpRequest) -> HttpResponse:
    """`?ids=1,2`: what fails and what loses something if those domains fail together.

    Nothing is injected. A malformed list is a 400 page saying why; an id that names no
    failure domain is a 404 naming it.
    """
    try:
        ids = parse_domain_ids(request.GET.getlist("ids"))
    except BadIds as exc:
        failed: dict[str, Any] = {"error": str(exc), "report": None}
        return render(request, "fabric/failure_domain_what_if.html", failed, status=400)
    found = {d.pk: d for d in FailureDomain.objects.filter(pk__in=ids).select_related("manager")}
    missing = [str(pk) for pk in ids if pk not in found]
    if missing:
        noun = "domain" if len(missing) == 1 else "domains"
        raise Http404(f"No failure {noun} with id {', '.join(missing)}.")
    domains = [found[pk] for pk in ids]
    report = failure_domain_impact(domains=domains)
    id_list = ",".join(str(pk) for pk in ids)
    context = {
        "error": "",
        "report": report,
        "domains": domains,
        "ids": id_list,
        "topology_url": f"{reverse('fabric:topology')}?domains={id_list}",
    }
    return render(request, "fabric/failure_domain_what_if.html", context)
