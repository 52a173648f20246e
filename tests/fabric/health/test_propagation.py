"""fabric.health.propagation: what a reported fault takes with it, on a hand-built fabric.

No database: the graph of tests/fabric/topology/fabrics.py (two racks, three power feeds,
four switches, three hosts, three enclosures, five devices).
"""

from __future__ import annotations

from fabric.health.propagation import Effect, port_effect, propagate
from fabric.topology.domains import domain_of
from tests.fabric.topology.fabrics import two_racks


def _healths(effects: dict[str, Effect]) -> dict[str, str]:
    return {element: effect.health for element, effect in effects.items()}


def test_a_failed_rack_fails_its_gear_their_devices_and_links() -> None:
    effects = propagate(two_racks(), {"rack:1": "critical"})
    rack_a = {
        "switch:1", "switch:2", "switch:3", "host:1", "host:2", "enclosure:1", "enclosure:2",
        "device:1", "device:2", "device:3", "device:4",
    }  # fmt: skip
    nodes = {e for e in effects if not e.startswith("link:")}
    assert nodes == rack_a
    # Every link of rack A's gear, also those to rack B's leaf (its spines' uplinks).
    assert {e for e in effects if e.startswith("link:")} == {f"link:{n}" for n in range(1, 13)} - {
        "link:3",
        "link:8",
    }
    assert {e.health for e in effects.values()} == {"critical"}
    assert effects["device:1"] == Effect("critical", "rack:1", "rack rack-a failed")


def test_a_failed_power_feed_fails_what_it_powers_and_the_devices_in_it() -> None:
    effects = propagate(two_racks(), {"power_feed:1": "critical"})
    assert {e for e in effects if not e.startswith("link:")} == {
        "switch:1", "switch:3", "host:1", "enclosure:1", "device:1", "device:2",
    }  # fmt: skip
    assert "enclosure:2" not in effects and "device:3" not in effects  # on pdu-a-2
    assert effects["device:2"].detail == "power feed pdu-a-1 failed"
    assert effects["link:6"].health == "critical"  # mem-a's uplink to spine-1, which lost power


def test_a_failed_enclosure_fails_its_devices_and_takes_its_links_down() -> None:
    effects = propagate(two_racks(), {"enclosure:1": "critical"})
    assert _healths(effects) == {
        "device:1": "critical",
        "device:2": "critical",
        "link:4": "critical",
    }
    assert effects["device:1"].detail == "enclosure gpu-a failed"


def test_a_failed_memory_box_is_named_as_one() -> None:
    effects = propagate(two_racks(), {"enclosure:2": "critical"})
    assert effects["device:3"].detail == "memory box mem-a failed"
    assert set(effects) == {"device:3", "device:4", "link:6", "link:7"}


def test_a_failed_switch_takes_its_links_down_and_no_device() -> None:
    effects = propagate(two_racks(), {"switch:3": "critical"})
    assert _healths(effects) == dict.fromkeys(
        ["link:1", "link:2", "link:4", "link:9", "link:10"], "critical"
    )
    assert effects["link:4"].detail == "switch leaf-a failed"


def test_a_failed_host_takes_its_links_down() -> None:
    effects = propagate(two_racks(), {"host:2": "critical"})
    assert _healths(effects) == {"link:2": "critical", "link:5": "critical"}


def test_a_failed_link_takes_nothing_else() -> None:
    assert propagate(two_racks(), {"link:4": "critical"}) == {}


def test_a_degraded_element_degrades_its_gear_and_devices_but_not_its_links() -> None:
    effects = propagate(two_racks(), {"power_feed:2": "warning"})
    assert _healths(effects) == dict.fromkeys(
        ["switch:2", "host:2", "enclosure:2", "device:3", "device:4"], "warning"
    )
    assert effects["device:3"].detail == "power feed pdu-a-2 degraded"
    assert propagate(two_racks(), {"switch:3": "warning"}) == {}


def test_the_stronger_effect_wins_and_names_the_broadest_cause() -> None:
    effects = propagate(
        two_racks(),
        {"enclosure:1": "critical", "power_feed:1": "critical", "rack:1": "warning"},
    )
    assert effects["device:1"] == Effect("critical", "power_feed:1", "power feed pdu-a-1 failed")
    # The enclosure's own failure is the feed's: it folds into the feed's alert.
    assert effects["enclosure:1"].cause == "power_feed:1"
    # Merely degraded by the rack where nothing failed.
    assert effects["device:3"] == Effect("warning", "rack:1", "rack rack-a degraded")


def test_healthy_readings_and_elements_outside_the_graph_take_nothing() -> None:
    graph = two_racks()
    assert propagate(graph, {"rack:1": "ok", "enclosure:1": "unknown"}) == {}
    assert propagate(graph, {"enclosure:99": "critical", "power_feed:9": "critical"}) == {}
    assert propagate(graph, {"device:1": "critical"}) == {}  # a device takes only itself


def test_propagation_walks_the_failure_domains_of_the_blast_radius() -> None:
    """One walk: what a fault takes is exactly its failure domain's elements."""
    graph = two_racks()
    for cause in ("rack:2", "power_feed:3", "enclosure:3", "switch:4", "host:3"):
        spec = domain_of(graph, cause)
        assert spec is not None
        effects = propagate(graph, {cause: "critical"})
        assert set(effects) == set(spec.elements) - {cause}, cause


def test_a_port_is_down_when_its_owner_failed_by_itself_or_by_what_it_inherited() -> None:
    effects = propagate(two_racks(), {"power_feed:1": "critical"})
    names = {"switch:3": "leaf-a", "switch:4": "leaf-b"}
    inherited = port_effect("switch:3", "ok", effects, names)
    assert inherited == effects["switch:3"]
    assert port_effect("switch:4", "critical", {}, names) == Effect(
        "critical", "switch:4", "switch leaf-b failed"
    )
    assert port_effect("switch:4", "warning", effects, names) is None
