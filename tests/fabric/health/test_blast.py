"""The figures of a blast radius stored on an alert, as every reader takes them."""

from __future__ import annotations

from fabric.health.blast import radius_json, stored_counts
from fabric.topology.radius import ImpactCounts


def test_the_stored_counts_are_read_and_the_lists_stand_in_for_older_alerts() -> None:
    stored = {"device_count": 40, "devices": [1], "host_count": 8, "hosts_degraded": [3, 4]}
    assert stored_counts(stored) == ImpactCounts(40, 8, 0, 2)
    assert stored_counts({}) == ImpactCounts()
    # Junk (a count that is no number, a list that is none) counts for nothing.
    assert stored_counts({"device_count": True, "hosts": "all"}) == ImpactCounts()


def test_what_radius_json_stores_reads_back_as_its_headline() -> None:
    empty = radius_json(None, None, key="switch:1", effect="lost")
    assert stored_counts(empty).headline() == empty["headline"]
