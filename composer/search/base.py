"""What every kind of search shares: a find (`Hit`), a kind (`Finder`), and how text is
matched (a part of a name, or an id) and said (a line of parts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from django.urls import reverse

from fabric.forms import MAX_ID

__all__ = [
    "MAX_QUERY_LENGTH",
    "Finder",
    "Hit",
    "each",
    "id_of",
    "joined",
    "page_url",
    "serial_words",
    "text_match",
]

MAX_QUERY_LENGTH = 100


@dataclass(frozen=True)
class Hit:
    """One thing found: what it is, what it is called, a line about it, and its page."""

    kind: str
    id: int
    label: str
    detail: str
    url: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "label": self.label,
            "detail": self.detail,
            "url": self.url,
        }


@dataclass(frozen=True)
class Finder:
    """How one kind is searched.

    `rows(user, text, operator)` is the kind's matching rows the viewer may see (unordered);
    `name` is the field the ranking compares with the text (None: the id only); `hits(rows,
    operator)` says a page of rows (all at once, so that a kind can fetch what its lines
    need in one query). `order` breaks ties after the ranking (default: the name, then the
    id). `private_name`: the name is in operators' words (an alert's message names the
    element), so members are ranked on the id only: ranking or sorting on a field they may
    not read would tell them its letters.
    """

    kind: str
    title: str
    icon: str
    operator_only: bool
    name: str | None
    rows: Callable[[Any, str, bool], QuerySet[Any]]
    hits: Callable[[list[Any], bool], list[Hit]]
    order: tuple[str, ...] = ()
    private_name: bool = False


def each(hit: Callable[[Any, bool], Hit]) -> Callable[[list[Any], bool], list[Hit]]:
    """A kind whose rows say themselves, one at a time."""

    def hits(rows: list[Any], operator: bool) -> list[Hit]:
        return [hit(row, operator) for row in rows]

    return hits


def id_of(text: str) -> int | None:
    """The id the text names ("17" or "#17"), or None (ASCII digits only: "²" is a digit to
    Python but no number to `int`, and no id)."""
    digits = text[1:] if text.startswith("#") else text
    if digits.isascii() and digits.isdigit() and len(digits) < 20 and int(digits) <= MAX_ID:
        return int(digits)
    return None


def text_match(text: str, fields: tuple[str, ...]) -> Q:
    """Rows where one of `fields` contains the text (any case), or whose id it is."""
    match = Q()
    for field in fields:
        match |= Q(**{f"{field}__icontains": text})
    ident = id_of(text)
    if ident is not None:
        match |= Q(pk=ident)
    return match


def page_url(name: str, pk: int) -> str:
    """The console page `name` of the row `pk`."""
    return reverse(name, args=[pk])


def serial_words(serial: str) -> str:
    """ "serial SN-1" in a hit's line (a bare number reads as anything), or nothing."""
    return f"serial {serial}" if serial else ""


def joined(*parts: object) -> str:
    """A hit's line: the parts that are there, between middle dots."""
    return " · ".join(str(p) for p in parts if p not in (None, ""))
