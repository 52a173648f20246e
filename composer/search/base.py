"""What every kind of search shares: a find (`Hit`), a kind (`Finder`), and how text is
matched (a part of a name, or an id) and said (a line of parts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from django.urls import reverse

MAX_QUERY_LENGTH = 100
# The largest id a database integer column holds: a longer number is not an id.
_MAX_ID = 2**63 - 1


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
    `name` is the field the ranking compares with the text; `hits(rows, operator)` says a
    page of rows (all at once, so that a kind can fetch what its lines need in one query).
    """

    kind: str
    title: str
    icon: str
    operator_only: bool
    name: str
    rows: Callable[[Any, str, bool], QuerySet[Any]]
    hits: Callable[[list[Any], bool], list[Hit]]


def each(hit: Callable[[Any, bool], Hit]) -> Callable[[list[Any], bool], list[Hit]]:
    """A kind whose rows say themselves, one at a time."""

    def hits(rows: list[Any], operator: bool) -> list[Hit]:
        return [hit(row, operator) for row in rows]

    return hits


def id_of(text: str) -> int | None:
    """The id the text names ("17" or "#17"), or None."""
    digits = text[1:] if text.startswith("#") else text
    if digits.isdigit() and len(digits) < 20 and int(digits) <= _MAX_ID:
        return int(digits)
    return None


def text_match(text: str, fields: tuple[str, ...]) -> Q:
    match = Q()
    for field in fields:
        match |= Q(**{f"{field}__icontains": text})
    ident = id_of(text)
    if ident is not None:
        match |= Q(pk=ident)
    return match


def page_url(name: str, pk: int) -> str:
    return reverse(name, args=[pk])


def serial_words(serial: str) -> str:
    return f"serial {serial}" if serial else ""


def joined(*parts: object) -> str:
    return " · ".join(str(p) for p in parts if p not in (None, ""))
