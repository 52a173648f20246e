"""Each placement policy of the registry on its own: its words, its constraint and its score,
table by table. No database."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import composer.placement.policies as policies
from composer.placement.policies import Policy
from composer.placement.request import DeviceItem, PlacementRequest
from composer.placement.snapshot import DeviceInfo, HostInfo
from tests.composer.placement.helpers import LEAVES, world

SWITCHES = {"e1": ("s1",), "e2": ("s1",), "e3": ("s2",), "e4": ("s1", "s2")}


def devices(free: dict[str, int]) -> dict[str, list[DeviceInfo]]:
    """`free` devices per enclosure, named e1-0, e1-1, ..."""
    return {
        e: [DeviceInfo(f"{e}-{i}", f"{e}-{i}", "gpu", "H100", e, {}) for i in range(n)]
        for e, n in free.items()
    }


def chosen(policy: Policy, count: int, free: dict[str, int]) -> list[str] | None:
    """The device names `policy` takes, enclosures ranked by name (all on the host's own
    switch: the order key's first element is 0)."""
    picked = policy.choose(count, devices(free), lambda e: (0, 0, int(e[1:])), SWITCHES.__getitem__)
    return None if picked is None else [d.name for d in picked]


def host(host_id: str = "host:a") -> HostInfo:
    return HostInfo(host_id, "ha", 64, 512, 128, 63.0, 0.0, (LEAVES[0],))


def test_the_registry_lists_the_selectable_policies_in_order_and_the_form_in_its_own() -> None:
    assert policies.NAMES == ["none", "enclosure", "switch", "pack"]
    assert [name for name, _ in policies.choices()] == ["none", "switch", "enclosure", "pack"]
    assert [p.name for p in policies.flagged()] == ["same_switch", "critical"]


WORDS = [
    (policies.NONE, "No preference", "", None),
    (policies.ENCLOSURE, "Spread across enclosures", "spread across enclosures", "domain"),
    (policies.SWITCH, "Spread across switches", "spread across switches", "domain"),
    (policies.PACK, "Pack onto as few hosts and enclosures as possible", "", None),
    (policies.SAME_SWITCH, "All devices behind one switch", "behind one switch", "switch"),
    (policies.CRITICAL, "Critical: share no switch or enclosure with another tenant", "", None),
]


@pytest.mark.parametrize(("policy", "label", "words", "check"), WORDS, ids=lambda v: str(v))
def test_each_policy_has_its_words_and_its_check(
    policy: Policy, label: str, words: str, check: str | None
) -> None:
    assert (policy.label, policy.words, policy.check) == (label, words, check)
    assert policy.help


ENABLED = [
    (PlacementRequest(), ["none"]),
    (PlacementRequest(policy="pack", critical=True), ["critical", "pack"]),
    (PlacementRequest(policy="enclosure", same_switch=True), ["same_switch", "enclosure"]),
]


@pytest.mark.parametrize(("request_", "names"), ENABLED)
def test_a_request_enables_its_flags_policies_then_its_selected_one(
    request_: PlacementRequest, names: list[str]
) -> None:
    assert [p.name for p in policies.enabled(request_)] == names


CHOOSE = [
    # policy, count, free per enclosure, the devices taken (None: the policy cannot be met)
    (policies.NONE, 2, {"e1": 3, "e2": 2}, ["e2-0", "e2-1"]),  # the fullest that holds all
    (policies.NONE, 4, {"e1": 3, "e2": 2}, ["e2-0", "e2-1", "e1-0", "e1-1"]),  # fragments
    (policies.NONE, 6, {"e1": 3, "e2": 2}, None),
    (policies.PACK, 2, {"e1": 3, "e2": 2}, ["e2-0", "e2-1"]),
    (policies.PACK, 4, {"e1": 3, "e2": 2}, ["e1-0", "e1-1", "e1-2", "e2-0"]),  # big blocks
    (policies.ENCLOSURE, 2, {"e1": 3, "e2": 2}, ["e1-0", "e2-0"]),
    (policies.ENCLOSURE, 3, {"e1": 3, "e2": 2}, None),
    (policies.SWITCH, 2, {"e1": 3, "e2": 2, "e3": 1}, ["e1-0", "e3-0"]),
    (policies.SWITCH, 2, {"e1": 3, "e2": 2}, None),  # both behind s1
    (policies.SWITCH, 2, {"e4": 2, "e3": 1}, None),  # e4 is behind both switches
]


@pytest.mark.parametrize(("policy", "count", "free", "names"), CHOOSE)
def test_each_policy_chooses_the_devices_of_one_host(
    policy: Policy, count: int, free: dict[str, int], names: list[str] | None
) -> None:
    assert chosen(policy, count, free) == names


TALLIES = [
    # policy, per switch of the items (4 GPUs in e1, 2 in e2), across how many domains
    (policies.NONE, {"switch:1": [6]}, [6]),
    (policies.ENCLOSURE, {"switch:1": [2]}, [2]),
    (policies.SWITCH, {"switch:1": [1]}, [1]),
]


@pytest.mark.parametrize(("policy", "per_switch", "spread"), TALLIES)
def test_each_policy_counts_what_fits_behind_a_switch_its_own_way(
    policy: Policy, per_switch: dict[str, list[int]], spread: list[int]
) -> None:
    snapshot = world(gpus={"a1": 4, "a2": 2, "b1": 0})
    found = {e: [snapshot.devices[i] for i in ids] for e, ids in snapshot.by_kind["gpu"].items()}
    items = [(DeviceItem("gpu", 2), found)]
    members = set(found)
    assert policy.per_switch(snapshot, items, members) == per_switch
    assert policy.spread_counts(snapshot, items, members) == spread


GROUP = [
    # request, the policy asked, whether the group of every enclosure meets it
    (PlacementRequest(policy="enclosure"), policies.ENCLOSURE, 3, True),
    (PlacementRequest(policy="enclosure"), policies.ENCLOSURE, 4, False),
    (PlacementRequest(policy="enclosure", same_switch=True), policies.ENCLOSURE, 3, False),
    (PlacementRequest(policy="switch"), policies.SWITCH, 2, True),
    (PlacementRequest(policy="switch"), policies.SWITCH, 3, False),
    (PlacementRequest(same_switch=True), policies.SAME_SWITCH, 6, True),
    (PlacementRequest(same_switch=True), policies.SAME_SWITCH, 7, False),
]


@pytest.mark.parametrize(("request_", "policy", "count", "meets"), GROUP)
def test_each_check_is_decided_per_reach_group(
    request_: PlacementRequest, policy: Policy, count: int, meets: bool
) -> None:
    snapshot = world()  # a1: 4 and a2: 2 behind leaf 1, b1: 4 behind leaf 2
    found = {e: [snapshot.devices[i] for i in ids] for e, ids in snapshot.by_kind["gpu"].items()}
    items = [(DeviceItem("gpu", count), found)]
    assert policy.group_fits(request_, snapshot, items, set(found)) is meets


SPARES = [
    # policy, the spare's enclosure and switches, whether it is refused next to e1 (on s1)
    (policies.NONE, "e1", {"s1"}, False),
    (policies.ENCLOSURE, "e1", {"s1"}, True),
    (policies.ENCLOSURE, "e2", {"s1"}, False),
    (policies.SWITCH, "e2", {"s1"}, True),
    (policies.SWITCH, "e3", {"s2"}, False),
    (policies.PACK, "e1", {"s1"}, False),
]


@pytest.mark.parametrize(("policy", "enclosure", "switches", "refused"), SPARES)
def test_each_policy_says_which_spare_breaks_it(
    policy: Policy, enclosure: str, switches: set[str], refused: bool
) -> None:
    assert policy.spare_excluded(enclosure, switches, {"e1"}, {"s1"}) is refused


SCORES = [
    # policy, idle share, core fit, tenant host penalty, the explanation's words
    (policies.NONE, 0.25, 11.25, 12.0, "spread: the most free cores first, hosts without"),
    (policies.ENCLOSURE, 0.25, 11.25, 12.0, "spread: the most free cores first, hosts without"),
    (policies.SWITCH, 0.25, 11.25, 12.0, "spread: the most free cores first, hosts without"),
    (policies.PACK, 0.25, 3.75, 0.0, "pack: the snuggest core fit"),
]


@pytest.mark.parametrize(("policy", "idle", "fit", "tenant", "words"), SCORES)
def test_each_policy_scores_hosts_and_says_how(
    policy: Policy, idle: float, fit: float, tenant: float, words: str
) -> None:
    request = PlacementRequest(policy=policy.name, tenant_hosts=frozenset({"host:a"}))
    assert policy.core_fit(idle) == pytest.approx(fit)
    assert policy.tenant_host_penalty(request, host()) == tenant
    assert policy.host_words(request, host()).startswith(words)
    assert policy.spreads_hosts is (policy is not policies.PACK)


CONFLICTS: list[tuple[PlacementRequest, str | None]] = [
    (PlacementRequest(items=(DeviceItem("gpu", 2),), same_switch=True), None),
    (PlacementRequest(items=(DeviceItem("gpu", 1),), policy="switch", same_switch=True), None),
    (
        PlacementRequest(
            items=(DeviceItem("gpu", 1), DeviceItem("nic", 2)), policy="switch", same_switch=True
        ),
        "policy 'switch' puts each of items[1]'s devices behind its own switch, same_switch "
        "all of them behind one; choose one.",
    ),
]


@pytest.mark.parametrize(("request_", "problem"), CONFLICTS)
def test_same_switch_refuses_a_policy_that_gives_each_device_its_own_switch(
    request_: PlacementRequest, problem: str | None
) -> None:
    assert policies.SAME_SWITCH.conflict(request_) == problem


def test_the_console_words_the_conflict_with_the_policys_label() -> None:
    assert policies.SAME_SWITCH.conflict_words(policies.SWITCH).startswith(
        "Spread across switches puts each device behind a switch of its own"
    )


ISOLATION = [
    # critical, tenant: what the request may not touch (acme holds leaf 1 critically,
    # globex holds something behind leaf 2)
    (False, "acme", set()),
    (False, "globex", {LEAVES[0]}),
    (True, "acme", {LEAVES[1]}),
    (True, "globex", {LEAVES[0]}),
]


@pytest.mark.parametrize(("critical", "tenant", "blocked"), ISOLATION)
def test_critical_isolation_blocks_other_tenants_domains(
    critical: bool, tenant: str, blocked: Sequence[str]
) -> None:
    snapshot = world(
        holders={LEAVES[0]: frozenset({"acme"}), LEAVES[1]: frozenset({"globex"})},
        critical={LEAVES[0]: "acme"},
    )
    request = PlacementRequest(critical=critical, tenant=tenant)
    assert set(policies.CRITICAL.blocked(request, snapshot)) == set(blocked)
    for policy in (policies.NONE, policies.SAME_SWITCH, policies.PACK):
        assert not policy.blocked(request, snapshot)
    assert policies.isolating() == (policies.CRITICAL,)


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered already"):
        policies.register(policies.PACK)


def test_a_stored_spec_naming_no_selectable_policy_finds_none() -> None:
    assert policies.choice("pack") is policies.PACK
    assert policies.choice("critical") is None
    assert policies.choice("tight") is None
