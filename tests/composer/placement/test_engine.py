"""The placement engine on hand-built snapshots: no database."""

from __future__ import annotations

import re

import pytest

from composer.placement.engine import place
from composer.placement.request import DeviceItem, Placement, PlacementRequest, Rejection
from tests.composer.placement.helpers import world


def gpus(count: int, **kwargs: object) -> tuple[DeviceItem, ...]:
    return (DeviceItem("gpu", count, **kwargs),)  # type: ignore[arg-type]


def placed(request: PlacementRequest, **world_options: object) -> Placement:
    result = place(request, world(**world_options))  # type: ignore[arg-type]
    assert isinstance(result, Placement), result
    return result


def rejected(request: PlacementRequest, **world_options: object) -> Rejection:
    result = place(request, world(**world_options))  # type: ignore[arg-type]
    assert isinstance(result, Rejection), result
    return result


ACCEPTED = [
    ("kind and count", PlacementRequest(items=gpus(2))),
    ("model", PlacementRequest(items=gpus(2, model="H100"))),
    ("attribute minima", PlacementRequest(items=gpus(2, minima={"memory_gib": 80}))),
    ("memory on one device", PlacementRequest(memory_gib=256)),
    ("storage", PlacementRequest(storage_tb=4)),
    ("cores and host memory", PlacementRequest(items=gpus(1), cores=64, host_memory_gib=512)),
    ("a named host", PlacementRequest(items=gpus(1), host="host:b")),
    ("latency ceiling", PlacementRequest(items=gpus(4), max_latency_ns=600)),
    ("spread across enclosures", PlacementRequest(items=gpus(3), policy="enclosure")),
    ("spread across switches", PlacementRequest(items=gpus(2), policy="switch")),
    ("pack", PlacementRequest(items=gpus(4), policy="pack")),
    ("same switch", PlacementRequest(items=gpus(6), same_switch=True)),
    ("critical", PlacementRequest(items=gpus(2), critical=True, tenant="acme")),
]

REJECTED = [
    ("too many devices", PlacementRequest(items=gpus(11)), "no_capacity"),
    ("unknown model", PlacementRequest(items=gpus(1, model="B200")), "no_capacity"),
    ("attribute minima", PlacementRequest(items=gpus(1, minima={"memory_gib": 141})),
     "no_capacity"),
    ("memory", PlacementRequest(memory_gib=2048), "no_capacity"),
    ("storage", PlacementRequest(storage_tb=20), "no_capacity"),
    ("cores", PlacementRequest(items=gpus(1), cores=65), "no_capacity"),
    ("latency ceiling", PlacementRequest(items=gpus(7), max_latency_ns=600), "latency"),
    ("spread across enclosures", PlacementRequest(items=gpus(4), policy="enclosure"),
     "domain_conflict"),
    ("spread across switches", PlacementRequest(items=gpus(3), policy="switch"),
     "domain_conflict"),
    ("same switch", PlacementRequest(items=gpus(8), same_switch=True), "domain_conflict"),
    ("negative count", PlacementRequest(items=gpus(-1)), "invalid"),
    ("unknown policy", PlacementRequest(items=gpus(1), policy="random"), "invalid"),
    ("unknown host", PlacementRequest(items=gpus(1), host="host:404"), "invalid"),
    ("nothing asked", PlacementRequest(), "invalid"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_"), ACCEPTED, ids=[c for c, _ in ACCEPTED])
def test_each_constraint_accepts_what_fits(case: str, request_: PlacementRequest) -> None:
    plan = placed(request_)
    assert plan.explanation
    assert len(plan.devices) == sum(i.count for i in request_.items) + (
        1 if request_.storage_tb else 0
    )


@pytest.mark.parametrize(("case", "request_", "code"), REJECTED, ids=[c for c, *_ in REJECTED])
def test_each_constraint_rejects_what_does_not_fit(
    case: str, request_: PlacementRequest, code: str
) -> None:
    rejection = rejected(request_)
    assert rejection.code == code
    assert rejection.message
    if code != "invalid":
        assert rejection.nearest.operator and rejection.nearest.text(operator=False)


def test_the_funnel_counts_what_each_constraint_removed() -> None:
    rejection = rejected(PlacementRequest(items=gpus(1, minima={"memory_gib": 81}), cores=64))
    assert rejection.funnel == (
        ("hosts: cores and memory", 2, 2),
        ("GPUs: kind and model", 10, 10),
        ("GPUs: attribute minima", 10, 0),
    )


def test_the_funnel_counts_hosts_cut_by_the_latency_ceiling() -> None:
    rejection = rejected(PlacementRequest(items=gpus(7), max_latency_ns=600))
    assert rejection.funnel[-2:] == (
        ("hosts: reach 7 GPUs", 2, 2),
        ("hosts: latency ceiling", 2, 0),
    )


SPINE_DOWN = {h: ("enclosure:mem", "enclosure:jbof") for h in ("host:a", "host:b")}


def test_a_rejection_names_the_memory_no_host_reaches_not_the_gpus() -> None:
    """The spine in maintenance: the memory box is free but out of every host's reach, and
    the GPUs are not what blocks a GPU + 256 GiB request."""
    rejection = rejected(PlacementRequest(items=gpus(1), memory_gib=256), cut=SPINE_DOWN)
    assert rejection.code == "no_capacity"
    assert rejection.message == "No host reaches 256 GiB of CXL memory through the fabric."
    assert rejection.funnel[-2:] == (
        ("hosts: reach 1 GPU", 2, 2),
        ("hosts: reach 256 GiB of CXL memory", 2, 0),
    )
    assert rejection.nearest.text(operator=False) == (
        "No host reaches any free CXL memory now; ask without it or wait."
    )
    assert "GPU" not in rejection.nearest.operator


def test_a_rejection_names_what_is_out_of_reach_together() -> None:
    """GPUs enough from one host, memory from another, never both from one."""
    cut = {"host:a": ("enclosure:mem",), "host:b": ("enclosure:a1", "enclosure:a2")}
    rejection = rejected(PlacementRequest(items=gpus(5), memory_gib=256), cut=cut)
    assert rejection.message == "No host reaches 256 GiB of CXL memory together with 5 GPUs."
    assert rejection.funnel[-1] == ("hosts: reach 256 GiB of CXL memory", 1, 0)
    assert rejection.nearest.text(operator=False) == (
        "No host that reaches 5 GPUs reaches any free CXL memory; ask for less of the rest, "
        "or wait."
    )


def test_the_nearest_amount_in_reach_is_offered() -> None:
    cut = {"host:a": ("enclosure:b1",), "host:b": ("enclosure:a1", "enclosure:a2")}
    rejection = rejected(PlacementRequest(items=gpus(7)), cut=cut)
    assert rejection.message == "No host reaches 7 GPUs through the fabric."
    assert rejection.nearest.operator == (
        "A host reaches at most 6 GPUs (ha); ask for 6 GPUs or wait."
    )
    assert rejection.nearest.text(operator=False) == (
        "A host reaches at most 6 GPUs; ask for 6 GPUs or wait."
    )


def test_the_nearest_alternative_names_the_best_switch_to_operators_only() -> None:
    rejection = rejected(PlacementRequest(items=gpus(8), same_switch=True))
    assert rejection.nearest.text(operator=True) == (
        "6 of 8 GPUs fit behind switch sw-1; relax 'same switch' or wait."
    )
    assert rejection.nearest.text(operator=False) == (
        "6 of 8 GPUs fit behind one switch; relax 'same switch' or wait."
    )


def test_same_switch_with_a_spread_names_the_spread_that_blocks() -> None:
    """Three GPUs behind one switch fit (six are behind sw-1), and three enclosures hold
    GPUs; but behind one switch there are only two enclosures: the spread is what blocks,
    decided per reach group, and the sentence counts enclosures behind one switch."""
    rejection = rejected(PlacementRequest(items=gpus(3), same_switch=True, policy="enclosure"))
    assert rejection.code == "domain_conflict"
    assert rejection.message == "No host reaches 3 GPUs spread across enclosures behind one switch."
    assert rejection.funnel[-2:] == (
        ("hosts: same switch", 2, 2),
        ("hosts: failure-domain policy", 2, 0),
    )
    assert rejection.nearest.text(operator=False) == (
        "GPUs are free in at most 2 enclosures behind one switch a host reaches; 3 asked. "
        "Relax 'spread across enclosures' or 'same switch', or wait."
    )


def test_same_switch_names_the_switch_that_blocks() -> None:
    rejection = rejected(PlacementRequest(items=gpus(8), same_switch=True))
    assert rejection.message == "No host reaches 8 GPUs behind one switch."
    assert rejection.funnel[-1] == ("hosts: same switch", 2, 0)


def test_a_spread_alone_names_the_domains_one_host_reaches() -> None:
    cut = {"host:a": ("enclosure:b1",), "host:b": ("enclosure:a1", "enclosure:a2")}
    rejection = rejected(PlacementRequest(items=gpus(3), policy="enclosure"), cut=cut)
    assert rejection.message == "No host reaches 3 GPUs spread across enclosures."
    assert rejection.nearest.text(operator=False) == (
        "GPUs are free in at most 2 enclosures a host reaches; 3 asked. "
        "Relax 'spread across enclosures' or wait."
    )


def test_items_that_fit_behind_different_switches_are_not_told_a_count_above_the_ask() -> None:
    """Four H100s fit behind sw-1 and four A100s behind sw-2, never both behind one: the
    nearest alternative says so, not "6 of 4 H100 GPUs fit"."""
    request = PlacementRequest(
        items=(DeviceItem("gpu", 4, model="H100"), DeviceItem("gpu", 4, model="A100")),
        same_switch=True,
    )
    rejection = rejected(request, models={"b1": "A100"})
    assert rejection.message == "No host reaches 4 H100 GPUs and 4 A100 GPUs behind one switch."
    assert rejection.nearest.text(operator=False) == (
        "No switch a host reaches holds 4 H100 GPUs and 4 A100 GPUs together; "
        "relax 'same switch' or wait."
    )


def test_same_switch_missed_only_under_the_latency_ceiling_says_so() -> None:
    """Host hb alone has room: within 800 ns it reaches four GPUs behind each leaf, and six
    behind sw-1 only beyond it. The sentence names the ceiling, not "6 of 6 GPUs fit"."""
    request = PlacementRequest(items=gpus(6), same_switch=True, max_latency_ns=800, cores=32)
    rejection = rejected(request, host_cores={"ha": 8, "hb": 64})
    assert rejection.message == "Every host that reaches enough devices fails the same switch."
    assert rejection.nearest.text(operator=False) == (
        "6 GPUs fit behind one switch, but not within 800 ns of one host; raise the latency "
        "ceiling or relax 'same switch', or wait."
    )


def test_same_switch_with_a_spread_takes_the_switch_that_holds_the_spread() -> None:
    """hb's own switch holds four GPUs in one chassis: two spread across enclosures are
    behind sw-1 (a1 and a2), which hb reaches too."""
    plan = placed(
        PlacementRequest(items=gpus(2), same_switch=True, policy="enclosure", host="host:b")
    )
    assert sorted(d.enclosure for d in plan.devices) == ["enclosure:a1", "enclosure:a2"]


def test_same_switch_with_a_spread_across_switches_is_invalid() -> None:
    """One switch and one switch per device contradict each other for more than one device;
    for one device each they agree."""
    rejection = rejected(PlacementRequest(items=gpus(2), same_switch=True, policy="switch"))
    assert rejection.code == "invalid"
    assert "policy" in rejection.message and "same_switch" in rejection.message
    placed(PlacementRequest(items=gpus(1), same_switch=True, policy="switch"))


INTERNAL_NAMES = re.compile(r"\b(sw-1|sw-2|spine|a1|a2|b1|jbof)\b")


@pytest.mark.parametrize(
    ("case", "request_"),
    [*ACCEPTED, *((case, request_) for case, request_, _ in REJECTED)],
    ids=[*(c for c, _ in ACCEPTED), *(c for c, _, _ in REJECTED)],
)
def test_a_tenant_reads_no_switch_or_enclosure_names(case: str, request_: PlacementRequest) -> None:
    """Every sentence has a tenant's rendering without the fabric's internals: switch and
    enclosure names, hosts other than the one the plan is on, and the fabric-wide figures
    that weigh hosts against each other."""
    outcome = place(request_, world())
    if isinstance(outcome, Placement):
        others = {h.name for h in world().hosts.values()} - {outcome.host_name}
        sentences = [note.text(operator=False) for note in outcome.explanation]
    else:
        others = {h.name for h in world().hosts.values()}
        sentences = [outcome.message, outcome.nearest.text(operator=False)]
    for sentence in sentences:
        assert not INTERNAL_NAMES.search(sentence), sentence
        assert not any(re.search(rf"\b{name}\b", sentence) for name in others), sentence
        assert "fabric ratio" not in sentence and "penalty" not in sentence, sentence


def test_memory_spans_two_devices_as_slices() -> None:
    plan = placed(PlacementRequest(memory_gib=768))
    assert [(m.name, m.gib) for m in plan.memory] == [("mem-0", 512), ("mem-1", 256)]
    assert plan.devices == ()


def test_memory_fits_in_the_smallest_device_that_holds_it() -> None:
    plan = placed(PlacementRequest(memory_gib=200), memory=(512, 256))
    assert [(m.name, m.gib) for m in plan.memory] == [("mem-1", 200)]


def test_a_host_takes_no_second_slice_of_a_memory_device() -> None:
    held = {"host:a": frozenset({"device:mem-1"})}  # host:a holds a slice of mem-1 already
    plan = placed(PlacementRequest(memory_gib=200, host="host:a"), memory=(512, 256), sliced=held)
    assert [(m.name, m.gib) for m in plan.memory] == [("mem-0", 200)]

    both = {"host:a": frozenset({"device:mem-0", "device:mem-1"})}
    rejection = rejected(PlacementRequest(memory_gib=200, host="host:a"), sliced=both)
    assert rejection.code == "no_capacity"
    assert rejection.funnel[-1] == ("hosts: one memory slice per device and host", 1, 0)
    assert "one slice of a device per host" in rejection.nearest.operator
    assert placed(PlacementRequest(memory_gib=200), sliced=both).host == "host:b"
    # Spanning devices: 768 GiB needs both, and host:a holds one of them.
    assert rejected(PlacementRequest(memory_gib=768, host="host:a"), sliced=held).code == (
        "no_capacity"
    )


def test_the_latency_ceiling_excludes_far_enclosures() -> None:
    plan = placed(PlacementRequest(items=gpus(4), host="host:b", max_latency_ns=600))
    assert {d.enclosure for d in plan.devices} == {"enclosure:b1"}
    assert all(d.latency_ns <= 600 for d in plan.devices)
    rejection = rejected(PlacementRequest(items=gpus(5), host="host:b", max_latency_ns=600))
    assert rejection.code == "latency"


def test_spread_uses_distinct_enclosures_and_pack_uses_one() -> None:
    spread = placed(PlacementRequest(items=gpus(3), policy="enclosure"))
    assert len({d.enclosure for d in spread.devices}) == 3
    packed = placed(PlacementRequest(items=gpus(4), policy="pack"))
    assert len({d.enclosure for d in packed.devices}) == 1


def test_spread_across_switches_uses_distinct_switches() -> None:
    plan = placed(PlacementRequest(items=gpus(2), policy="switch"))
    assert {d.enclosure for d in plan.devices} in ({"enclosure:a1", "enclosure:b1"},
                                                   {"enclosure:a2", "enclosure:b1"})  # fmt: skip


def test_critical_isolation_avoids_switches_other_tenants_hold() -> None:
    plan = placed(
        PlacementRequest(items=gpus(2), critical=True, tenant="acme"),
        holders={"switch:1": frozenset({"globex"})},
    )
    assert plan.host == "host:b"
    assert {d.enclosure for d in plan.devices} == {"enclosure:b1"}
    assert rejected(
        PlacementRequest(items=gpus(2), critical=True, tenant="acme"),
        holders={"switch:1": frozenset({"globex"}), "switch:2": frozenset({"globex"})},
    ).funnel[-1] == ("hosts: isolation", 2, 0)


def test_a_critical_hold_keeps_other_tenants_out() -> None:
    plan = placed(PlacementRequest(items=gpus(2), tenant="acme"), critical={"switch:1": "globex"})
    assert plan.host == "host:b"
    own = placed(PlacementRequest(items=gpus(2), tenant="globex"), critical={"switch:1": "globex"})
    assert own.host == "host:a"


def test_devices_behind_the_hosts_own_switch_are_preferred() -> None:
    plan = placed(PlacementRequest(items=gpus(2), host="host:b"))
    assert {d.enclosure for d in plan.devices} == {"enclosure:b1"}
    operator = " ".join(note.text(operator=True) for note in plan.explanation)
    tenant = " ".join(note.text(operator=False) for note in plan.explanation)
    assert "2 of 2 devices sit behind the host's own switch (sw-2)" in operator
    assert "2 of 2 devices sit behind the host's own switch;" in tenant


def test_a_partly_used_enclosure_is_taken_before_an_untouched_one() -> None:
    plan = placed(PlacementRequest(items=gpus(2), host="host:a"))
    assert {d.enclosure for d in plan.devices} == {"enclosure:a2"}


def test_a_packed_request_goes_to_the_host_with_fewer_free_cores() -> None:
    request = PlacementRequest(memory_gib=64, cores=8, policy="pack")
    plan = placed(request, host_cores={"ha": 120, "hb": 16})
    assert plan.host == "host:b"
    assert "pack: the snuggest core fit" in " ".join(n.operator for n in plan.explanation)


@pytest.mark.parametrize("policy", ["enclosure", "switch"])
def test_a_spreading_request_goes_to_the_host_with_more_free_cores(policy: str) -> None:
    request = PlacementRequest(memory_gib=64, cores=8, policy=policy)
    plan = placed(request, host_cores={"ha": 16, "hb": 120})
    assert plan.host == "host:b"
    assert "spread: the most free cores first" in " ".join(n.operator for n in plan.explanation)


def test_a_spreading_request_goes_where_the_tenant_has_no_composition_yet() -> None:
    """Nothing tells the hosts apart but the tenant's other composition on ha."""
    assert placed(PlacementRequest(memory_gib=64)).host == "host:a"
    mine = frozenset({"host:a"})
    plan = placed(PlacementRequest(memory_gib=64, tenant_hosts=mine))
    assert plan.host == "host:b"
    # Even with more cores free on ha; and packing ignores it.
    assert (
        placed(
            PlacementRequest(memory_gib=64, cores=8, tenant_hosts=mine),
            host_cores={"ha": 64, "hb": 32},
        ).host
        == "host:b"
    )
    packed = PlacementRequest(memory_gib=64, cores=8, tenant_hosts=mine, policy="pack")
    assert placed(packed, host_cores={"ha": 16, "hb": 64}).host == "host:a"
    # When every host has one, the tenant's hosts rank among themselves as before.
    both = frozenset({"host:a", "host:b"})
    assert placed(PlacementRequest(memory_gib=64, tenant_hosts=both)).host == "host:a"


def test_held_back_hosts_keep_the_walk_in_penalty_order() -> None:
    from composer.placement.hosts import _moved_back

    walk = [(1.0, "a", "h:a"), (2.0, "b", "h:b"), (3.0, "c", "h:c"), (9.0, "d", "h:d")]
    moved = list(_moved_back(walk, frozenset({"h:a", "h:c"}), 5.0))
    assert moved == [
        (2.0, "b", "h:b"),
        (6.0, "a", "h:a"),
        (8.0, "c", "h:c"),
        (9.0, "d", "h:d"),
    ]


def test_the_uplink_budget_rejects_an_oversubscribed_host() -> None:
    rejection = rejected(PlacementRequest(items=gpus(4), host="host:a"), oversubscription=3.0)
    assert rejection.funnel[-1] == ("hosts: uplink bandwidth", 1, 0)
    assert placed(PlacementRequest(items=gpus(3), host="host:a"), oversubscription=3.0)


def test_the_same_input_gives_the_same_plan() -> None:
    request = PlacementRequest(items=gpus(3), memory_gib=600, storage_tb=1, cores=4)
    assert place(request, world()) == place(request, world())


def test_taking_devices_from_a_snapshot_leaves_them_out() -> None:
    snapshot = world().taking(devices=["device:b1-0"], memory_gib={"device:mem-0": 500})
    assert "device:b1-0" not in snapshot.devices
    assert snapshot.devices["device:mem-0"].free_gib == 12


def test_a_warm_snapshot_decides_as_a_cold_one() -> None:
    requests = [
        PlacementRequest(items=gpus(2), memory_gib=600, cores=4),
        PlacementRequest(items=gpus(6), same_switch=True, storage_tb=1),
        PlacementRequest(items=gpus(3), policy="enclosure", max_latency_ns=600),
        PlacementRequest(items=gpus(4), policy="enclosure"),
    ]
    warm = world()
    first = [place(r, warm) for r in requests]
    assert warm.memo  # what decisions share is kept on the snapshot
    assert [place(r, warm) for r in requests] == first
    assert [place(r, world()) for r in requests] == first


def test_taking_from_a_used_snapshot_forgets_what_it_memoised() -> None:
    request = PlacementRequest(items=gpus(2), memory_gib=200, host="host:a")
    snapshot = world()
    before = place(request, snapshot)
    assert isinstance(before, Placement), before
    assert place(request, snapshot) == before
    taken = [p.device for p in (*before.devices, *before.memory)]
    after = place(request, snapshot.taking(devices=taken))
    assert isinstance(after, Placement), after
    assert not {p.device for p in (*after.devices, *after.memory)} & set(taken)
