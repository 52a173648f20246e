"""What each composition method a driver reports means, in an operator's words.

A connection test names the ways a manager composes in the manager's own terms (Redfish's
"expandable", "specific" and "compose-action"; the simulated manager's "bind"). The
manager's page and the connection test's message show each term beside these words, from
this one table, so that reading them needs no Redfish.
"""

from __future__ import annotations

from collections.abc import Iterable

COMPOSITION_METHODS: dict[str, str] = {
    "expandable": "adds devices to an existing server (PATCH of its resource blocks)",
    "specific": "builds a new composed system from named blocks (POST to Systems; "
    "DELETE takes it apart)",
    "compose-action": "asks the service to choose the blocks (Compose action, Preview then Apply)",
    "bind": "binds each device to its host, one at a time",
}


def method_rows(names: Iterable[str]) -> list[tuple[str, str]]:
    """(term, plain words) per method; the words are "" for a term this table lacks (a
    driver's own), which is then shown as the driver says it."""
    return [(name, COMPOSITION_METHODS.get(name, "")) for name in names]


def methods_text(names: Iterable[str]) -> str:
    """The methods on one line: "expandable: adds devices ...; specific: ..."."""
    return "; ".join(f"{name}: {words}" if words else name for name, words in method_rows(names))
