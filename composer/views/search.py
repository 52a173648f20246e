"""The search page: everything the viewer may see that matches, grouped by kind, and one kind
a page at a time ("more hosts").

Reads go through `composer.search` only, so the page, its kind pages and the API
find the same things with the same scoping. An empty box is the page's start, not an error.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from composer.forms.search import SearchForm
from composer.search import FINDERS, ranked, search, search_kinds
from fabric.permissions import is_operator
from fabric.views.common import DEFAULT_PAGE_SIZE, BadPage, paginate

PER_KIND = 5


@login_required
def search_view(request: HttpRequest) -> HttpResponse:
    """`?q=` finds; `&kind=` pages through one kind; neither shows what can be searched."""
    operator = is_operator(request.user)
    form = SearchForm(request.GET, operator=operator)
    context: dict[str, Any] = {
        "form": form,
        "kinds": search_kinds(operator=operator),
        "operator": operator,
        "query": "",
        "groups": [],
        "page": None,
        "finder": None,
        "errors": [],
    }
    status = 200
    if not request.GET.get("q", "").strip() and "kind" not in request.GET:
        form = SearchForm(operator=operator)  # a first visit: no "required" error yet
        context["form"] = form
    elif not form.is_valid():
        status = 400
        for name, messages in form.errors.items():
            label = form.fields[name].label if name in form.fields else name
            context["errors"].extend(f"{label}: {m}" for m in messages)
    else:
        text, kind = form.cleaned_data["q"], form.cleaned_data["kind"]
        context["query"] = text
        if kind:
            finder = FINDERS[kind]
            context["finder"] = finder
            try:
                page = paginate(
                    ranked(finder, user=request.user, text=text),
                    page=request.GET.get("page"),
                    per_page=DEFAULT_PAGE_SIZE,
                )
            except BadPage as bad:
                context["errors"].append(bad.message)
                status = bad.status
            else:
                context["page"] = page
                context["hits"] = finder.hits(list(page.object_list), operator)
        else:
            context["groups"] = search(user=request.user, text=text, per_kind=PER_KIND)
    response = render(request, "composer/search.html", context, status=status)
    patch_vary_headers(response, ["Cookie"])
    return response
