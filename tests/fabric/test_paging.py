"""fabric.paging.IdsFirst: the same pages as plain slicing, joining only the page's rows."""

from __future__ import annotations

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from fabric.models import Device
from fabric.paging import IdsFirst
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("ordering", [("name", "pk"), ("-memory_gib", "pk"), ("pool__name", "-pk")])
def test_pages_are_the_same_as_plain_slicing(ordering: tuple[str, ...]) -> None:
    fabric_small()
    queryset = Device.objects.select_related("pool", "enclosure__rack").order_by(*ordering)
    plain = Paginator(queryset, 3)
    # django-stubs' _SupportsPagination asks for indexing and iteration too; Paginator only
    # counts and slices what it pages, which is all IdsFirst does.
    ids_first: Paginator[Device] = Paginator(IdsFirst(queryset), 3)  # type: ignore[arg-type]
    assert ids_first.count == plain.count == 10
    for number in plain.page_range:
        assert list(ids_first.page(number)) == list(plain.page(number))


def test_a_page_is_one_query_joining_only_its_rows() -> None:
    fabric_small()
    ids_first = IdsFirst(Device.objects.select_related("pool").order_by("name", "pk"))
    page: Paginator[Device] = Paginator(ids_first, 4)  # type: ignore[arg-type]  # as above
    page.count  # noqa: B018 - the COUNT, as the paginator does first
    with CaptureQueriesContext(connection) as queries:
        rows = list(page.page(2))
    assert [d.name for d in rows] == ["gpu-b-0", "gpu-b-1", "gpu-b-2", "gpu-b-3"]
    assert rows[0].pool.slug == "h100"  # joined in the same query
    assert len(queries) == 1
    assert " IN (SELECT" in queries.captured_queries[0]["sql"].upper()


def test_it_stays_out_of_distinct_grouped_or_annotated_querysets() -> None:
    assert IdsFirst.applies(Device.objects.all())
    assert not IdsFirst.applies(Device.objects.distinct())
    assert not IdsFirst.applies(Device.objects.annotate(n=Count("pk")))
    assert not IdsFirst.applies([1, 2, 3])
