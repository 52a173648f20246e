"""Parsing of input shared by the pages and the API of the fabric."""

from __future__ import annotations

# The largest id a database column can hold (a 64-bit signed integer); a larger number
# in a query parameter is bad input, not a database error.
MAX_ID = 2**63 - 1
MAX_WHAT_IF_DOMAINS = 50


class BadIds(ValueError):
    """An `ids` value that is not a comma-separated list of ids (of failure domains, of
    devices to put in maintenance…)."""


def parse_ids(values: list[str], *, limit: int, noun: str, nouns: str) -> list[int]:
    """`["1,2", "3"]` -> `[1, 2, 3]` (duplicates dropped, order kept); raises BadIds in
    the words of what they are ids of (`noun`, `nouns`: "device", "devices")."""
    parts = [part.strip() for value in values for part in value.split(",") if part.strip()]
    if not parts:
        raise BadIds(f"Choose at least one {noun}.")
    bad = [part for part in parts if not (part.isascii() and part.isdigit()) or int(part) > MAX_ID]
    if bad:
        raise BadIds(f"Not {noun.replace(' ', '-')} ids: {', '.join(p[:24] for p in bad[:5])}.")
    ids = list(dict.fromkeys(int(part) for part in parts))
    if len(ids) > limit:
        raise BadIds(f"At most {limit} {nouns} at once (got {len(ids)}).")
    return ids


def parse_domain_ids(values: list[str], *, limit: int = MAX_WHAT_IF_DOMAINS) -> list[int]:
    """`["1,2", "3"]` -> `[1, 2, 3]` (duplicates dropped, order kept); raises BadIds."""
    return parse_ids(values, limit=limit, noun="failure domain", nouns="failure domains")
