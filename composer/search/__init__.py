"""Global search: one box that finds hosts, devices, enclosures, switches, links, racks, power
feeds, compositions, tenants, alerts, jobs, pools and fabric managers, grouped by kind.

Each kind is one `Finder` in `FINDERS`: what it matches, how a row reads, and who may see it.
The search page, its "more of this kind" pages and GET /api/v1/search/ all read this registry,
so a kind is added in one place. Scoping follows the rest of the console: fabric internals
(hosts, enclosures, switches, links, racks, power feeds, managers, serial numbers) are for
operators (`fabric_kinds`); a tenant member finds its own compositions, jobs, tenants and the
alerts that hurt them, and devices and pools as the device and pool pages show them
(availability, never serials) (`console_kinds`).

A search is one bounded query per kind (the first rows, ranked: an exact name or id first,
then names that start with the text, then the rest by name), never a COUNT per kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Case, IntegerField, QuerySet, Value, When

from composer.search.base import MAX_QUERY_LENGTH, Finder, Hit, id_of
from composer.search.console_kinds import CONSOLE_FINDERS
from composer.search.fabric_kinds import FABRIC_FINDERS
from fabric.permissions import is_operator

__all__ = [
    "FINDERS",
    "MAX_QUERY_LENGTH",
    "Finder",
    "Group",
    "Hit",
    "ranked",
    "search",
    "search_kinds",
]

# The order the results show the kinds in: what an operator looks for most, first.
ORDER = (
    "host",
    "device",
    "enclosure",
    "switch",
    "link",
    "rack",
    "power_feed",
    "composition",
    "pool",
    "tenant",
    "alert",
    "job",
    "manager",
)
FINDERS: dict[str, Finder] = {
    finder.kind: finder
    for finder in sorted((*FABRIC_FINDERS, *CONSOLE_FINDERS), key=lambda f: ORDER.index(f.kind))
}


def search_kinds(*, operator: bool) -> list[Finder]:
    """The kinds the viewer may search, in the order the results show them."""
    return [f for f in FINDERS.values() if operator or not f.operator_only]


def ranked(finder: Finder, *, user: Any, text: str) -> QuerySet[Any]:
    """The kind's matches the viewer may see, best first: the id or exact name, then names
    that start with the text, then the rest in the kind's order (the id last, so that pages
    are stable). A member is never ranked or sorted on a name in operators' words."""
    operator = is_operator(user)
    rows = finder.rows(user, text, operator)
    name = finder.name if operator or not finder.private_name else None
    whens = []
    ident = id_of(text)
    if ident is not None:
        whens.append(When(pk=ident, then=Value(0)))
    if name:
        whens.append(When(**{f"{name}__iexact": text}, then=Value(0)))
        whens.append(When(**{f"{name}__istartswith": text}, then=Value(1)))
    rank = Case(*whens, default=Value(2), output_field=IntegerField()) if whens else Value(2)
    order = finder.order or ((name,) if name else ())
    return rows.annotate(search_rank=rank).order_by("search_rank", *order, "pk")


@dataclass(frozen=True)
class Group:
    """The first hits of one kind, and whether there are more than those."""

    finder: Finder
    hits: list[Hit]
    more: bool


def search(
    *, user: Any, text: str, per_kind: int = 5, kinds: list[str] | None = None
) -> list[Group]:
    """The groups with at least one hit, in `search_kinds` order; one query per kind."""
    operator = is_operator(user)
    groups = []
    for finder in search_kinds(operator=operator):
        if kinds and finder.kind not in kinds:
            continue
        rows = list(ranked(finder, user=user, text=text)[: per_kind + 1])
        if rows:
            hits = finder.hits(rows[:per_kind], operator)
            groups.append(Group(finder=finder, hits=hits, more=len(rows) > per_kind))
    return groups
