"""A spec in words (the templates page): every part of a request, each kind and policy by its
declaration's words; a member's line counts the named devices and the pinned host without
naming them."""

from __future__ import annotations

from composer.spec_words import spec_words
from composer.specs import spec_normalise

EVERYTHING = spec_normalise(
    {
        "items": [
            {"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2, "minima": {"memory_gib": 80}},
            {"kind": "gpu", "share": 250},
            {"kind": "nic", "count": 1},
        ],
        "devices": [{"device": "gpu-03"}, {"device": "cxl-01", "gib": 256}],
        "memory_gib": 1536,
        "storage_tb": 4,
        "cores": 32,
        "host_memory_gib": 256,
        "host": "host-a-01",
        "max_latency_ns": 600,
        "policy": "enclosure",
        "critical": True,
        "self_heal": True,
    }
)


def test_an_operator_reads_every_part_of_a_request() -> None:
    assert spec_words(EVERYTHING, operator=True) == (
        "2 GPUs (H100 PCIe 80GB, at least 80 GiB each), a 250/1000 share of a GPU, 1 NIC, "
        "named devices gpu-03, cxl-01 (256 GiB), 1.5 TiB of CXL memory, 4 TB of NVMe, "
        "32 host cores, 256 GiB of host memory; on host host-a-01; within 600 ns; "
        "spread across enclosures; critical: share no switch or enclosure with another "
        "tenant; self-heal"
    )


def test_a_member_reads_how_many_devices_are_named_and_that_a_host_is_set() -> None:
    words = spec_words(EVERYTHING, operator=False)
    assert "2 named devices" in words and "on a set host" in words
    assert "gpu-03" not in words and "cxl-01" not in words and "host-a-01" not in words


def test_flags_and_policies_read_as_the_form_says_them() -> None:
    spec = spec_normalise(
        {"items": [{"kind": "gpu", "count": 1}], "cores": 1, "policy": "pack", "same_switch": True}
    )
    assert spec_words(spec, operator=False) == (
        "1 GPU, 1 host core; pack onto as few hosts and enclosures as possible; "
        "all devices behind one switch"
    )
    assert spec_words({}, operator=True) == "nothing"
