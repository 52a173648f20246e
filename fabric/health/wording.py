"""How an alert reads for a tenant: what kind of element and what is wrong, never which one.

An alert's own message names the element ("Enclosure mem-a-01 degraded: ...") and carries
the fabric manager's own words; both are fabric internals that a tenant does not see
(README). A tenant's sentence is therefore built from the alert's structure alone (the kind
of its source and its rule), not by cutting names out of the operator's message. Pure
Python, like the rules whose keys it reads.
"""

from __future__ import annotations

from collections.abc import Iterable

from fabric.health import rules

__all__ = ["tenant_alert_message", "tenant_wordings_with"]

# "A switch", "An enclosure": what a tenant is told failed.
_SOURCES = {
    "device": "A device",
    "link": "A link",
    "switch": "A switch",
    "host": "A host",
    "enclosure": "An enclosure",
    "power_feed": "A power feed",
    "rack": "A rack",
    "fabric_manager": "The fabric manager",
}
# What is wrong with it, after "<source> your compositions depend on".
_RULES = {
    rules.ELEMENT_FAILED: "failed",
    rules.ELEMENT_DEGRADED: "is degraded",
    rules.TEMPERATURE: "is running too hot",
    rules.ECC_UNCORRECTABLE: "reports uncorrectable memory errors",
    rules.ECC_CORRECTABLE: "reports many correctable memory errors",
    rules.LINK_ERRORS: "reports link errors",
    rules.LINK_DOWNTRAINED: "runs below its link width or speed",
    rules.POWER_OFF: "is powered off",
    rules.MANAGER_UNREACHABLE: "is unreachable",
    # Opened by the composer's clock of bookings on the host of an occurrence that could
    # not come up (composer.services.booking_start); no health rule raises it.
    "booking_failed": "could not bring up a booked window",
}


def tenant_alert_message(source_type: str, rule: str) -> str:
    """ "A switch your compositions depend on failed.": the alert in a tenant's words (a
    tenant only sees alerts that hurt its compositions)."""
    source = _SOURCES.get(source_type, "A fabric element")
    what = _RULES.get(rule) or f"has a problem ({rules.RULES.get(rule, 'health').lower()})"
    return f"{source} your compositions depend on {what}."


def tenant_wordings_with(text: str, source_types: Iterable[str]) -> list[tuple[str, str]]:
    """The (source type, rule) pairs whose tenant sentence holds `text` (case aside): how a
    tenant's text search matches alerts by the words the tenant is shown, never by the
    element's name or the manager's own message."""
    needle = text.strip().casefold()
    if not needle:
        return []
    return [
        (source, rule)
        for source in source_types
        for rule in rules.RULES
        if needle in tenant_alert_message(source, rule).casefold()
    ]
