"""Helpers shared by the console pages of both apps: access, pagination, secrets, htmx."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse

from fabric.models import FabricManager
from fabric.paging import IdsFirst
from fabric.permissions import is_operator
from fabric.secrets import MASK, is_secret_key, mask_secrets

ViewFunc = TypeVar("ViewFunc", bound=Callable[..., HttpResponse | StreamingHttpResponse])

PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50
HISTORY_PAGE_SIZE = 20

# A settings or attributes key containing one of these words holds something secret.


def operator_required(view: ViewFunc) -> ViewFunc:
    """Login required; then anyone who is not an operator gets 404 (outsiders
    learn nothing, not even that the page exists)."""

    @wraps(view)
    def wrapper(
        request: HttpRequest, *args: Any, **kwargs: Any
    ) -> HttpResponse | StreamingHttpResponse:
        if not is_operator(request.user):
            raise Http404("No such page.")
        return view(request, *args, **kwargs)

    # wraps() keeps the view's name and signature; mypy cannot tie `wrapper` to ViewFunc.
    return login_required(wrapper)  # type: ignore[return-value]


class BadPage(Exception):
    """A page number that is not a number (400) or past the last page (404)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def paginate(
    object_list: QuerySet[Any] | Sequence[Any], *, page: str | None, per_page: int
) -> Page:
    """The requested page, strictly: no silent fallback to page 1 for a wrong number.

    Raises BadPage(status=400) for a page that is not a positive whole number and
    BadPage(status=404) for one past the end. Counting is one `COUNT(*)` query.
    """
    # Cut big tables' pages on the base table first, then join only the page's rows.
    pageable = IdsFirst(object_list) if IdsFirst.applies(object_list) else object_list
    # django-stubs' _SupportsPagination asks for indexing and iteration too; Paginator
    # only counts and slices what it pages, which is all IdsFirst does.
    paginator = Paginator(pageable, per_page, allow_empty_first_page=True)  # type: ignore[arg-type]
    if page in (None, ""):
        number = 1
    else:
        try:
            number = int(str(page))
        except ValueError:
            raise BadPage(f"Page {page!r} is not a page number.", status=400) from None
        if number < 1:
            raise BadPage(f"Page {number} is not a page number; pages start at 1.", status=400)
    if number > paginator.num_pages:
        raise BadPage(
            f"Page {number} does not exist: there {'is' if paginator.num_pages == 1 else 'are'} "
            f"{paginator.num_pages} page{'' if paginator.num_pages == 1 else 's'}.",
            status=404,
        )
    return paginator.page(number)


def page_size(value: str | None) -> int:
    """The `per_page` choice; raises BadRequest naming the allowed values."""
    if value in (None, ""):
        return DEFAULT_PAGE_SIZE
    try:
        size = int(str(value))
    except ValueError:
        size = 0
    if size not in PAGE_SIZES:
        allowed = ", ".join(str(s) for s in PAGE_SIZES)
        raise BadRequest(f"per_page must be one of {allowed}.")
    return size


def paginate_or_raise(
    object_list: QuerySet[Any] | Sequence[Any], *, page: str | None, per_page: int
) -> Page:
    """`paginate`, turning a bad page into the matching error page (400 or 404)."""
    try:
        return paginate(object_list, page=page, per_page=per_page)
    except BadPage as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        raise BadRequest(exc.message) from None


@dataclass(frozen=True)
class Setting:
    """One key of a JSON settings or attributes dict, ready to display."""

    key: str
    value: str
    is_masked: bool


def display_settings(values: Mapping[str, Any] | None) -> list[Setting]:
    """Top-level keys sorted, nested values as compact JSON, secrets masked at any depth."""
    rows = []
    for key, value in sorted((values or {}).items()):
        if is_secret_key(str(key)) and value not in (None, ""):
            rows.append(Setting(key=str(key), value=MASK, is_masked=True))
            continue
        masked = mask_secrets(value)
        text = masked if isinstance(masked, str) else json.dumps(masked, sort_keys=True)
        rows.append(Setting(key=str(key), value=text, is_masked=False))
    return rows


def is_htmx_partial(request: HttpRequest, target: str) -> bool:
    """True for an htmx request that asks for the partial swapped into `target`.

    A history restore (back button after the cache expired) wants the whole page.
    """
    return (
        request.headers.get("HX-Request") == "true"
        and not request.headers.get("HX-History-Restore-Request")
        and request.headers.get("HX-Target") == target
    )


def filtered_manager(filterset: Any) -> FabricManager | None:
    """The fabric manager a list is narrowed to (`?manager=<id>`, as the manager page links
    it), so that the filter bar can name it instead of hiding it; None when there is none."""
    if "manager" not in filterset.form.fields or not filterset.is_valid():
        return None
    manager_id = filterset.form.cleaned_data.get("manager")
    if not manager_id:
        return None
    return FabricManager.objects.filter(pk=manager_id).only("pk", "name").first()
