"""The counterfactual's answer in figures (the API's body, the page's table) and its method
in words (the page's text). Pure Python."""

from __future__ import annotations

from typing import Any

from composer.counterfactual.replay import Result

__all__ = ["METHOD", "resource_rows", "result_body"]

METHOD: tuple[str, ...] = (
    "Every composition that was up at some time in the period counts, from when it became "
    "ready to when it was released (or now, if it still runs), clipped to the period.",
    "What it needed is the most it held at once while up: its GPUs (a GPU share as its "
    "fraction of one GPU), its host cores, and memory: its host memory plus its CXL memory, "
    "since a fixed server has only the memory in its own box. Storage and network cards are "
    "left out.",
    "The compositions are replayed in time order; at one instant, those that ended leave "
    "before those that start arrive. Each arriving composition goes on the open server of "
    "a chosen shape where it fits with least room left over (best fit: the leftover GPUs, "
    "cores and memory as shares of the server, summed). When none fits, a new server is "
    "opened: the smallest chosen shape that holds it alone.",
    "A composition bigger than any one server (more GPUs, cores or memory than the shape "
    "has) takes whole servers of its own, as many as its largest need asks for (twelve "
    "GPUs on 8-GPU servers: two), its GPUs, cores and memory charged evenly on them; "
    "nothing else goes on those servers. A shape that names a GPU model takes only "
    "compositions whose GPUs are of that model; a composition no chosen shape can hold is "
    "counted apart as unplaced.",
    "A server is switched off when its last composition leaves; the next one opened stands "
    "for it. So the most servers open at once is how many servers the same work needed. "
    "Idle is what those servers have that the compositions on them did not need: at that "
    "peak, and averaged over the whole period.",
    "The composable data centre's use is the same compositions' concurrent demand: each "
    "resource at its own peak, and averaged over the period. There each composition takes "
    "what it asks for from shared pools, with no fixed ratio between GPUs, cores and memory.",
)


def _num(value: float) -> float:
    return round(value, 3)


def resource_rows(result: Result) -> list[dict[str, Any]]:
    """One row per resource (GPUs, cores, memory GiB): the fixed servers at their peak
    (capacity, in use, idle, idle share), idle on average, and the composable use."""
    at_peak = (
        ("gpus", "GPUs", result.capacity_at_peak.gpus, result.used_at_peak.gpus),
        ("cores", "Cores", result.capacity_at_peak.cores, result.used_at_peak.cores),
        (
            "memory_gib",
            "Memory GiB",
            result.capacity_at_peak.memory_gib,
            result.used_at_peak.memory_gib,
        ),
    )
    composable = (
        result.composable_peak.gpus,
        result.composable_peak.cores,
        result.composable_peak.memory_gib,
    )
    rows = []
    for i, (key, label, capacity, used) in enumerate(at_peak):
        idle = capacity - used
        rows.append(
            {
                "resource": key,
                "label": label,
                "fixed_capacity_at_peak": _num(capacity),
                "fixed_used_at_peak": _num(used),
                "fixed_idle_at_peak": _num(idle),
                "fixed_idle_share_at_peak": _num(idle / capacity) if capacity else 0.0,
                "fixed_idle_average": _num(result.idle_average[i]),
                "composable_peak": _num(composable[i]),
                "composable_average": _num(result.composable_average[i]),
            }
        )
    return rows


def result_body(result: Result) -> dict[str, Any]:
    """The replay's answer as the API serves it."""
    return {
        "servers_at_peak": result.servers_at_peak,
        "peak_at": result.peak_at,
        "servers_by_shape_at_peak": [
            {"shape": name, "servers": count}
            for name, count in sorted(result.by_shape_at_peak.items())
        ],
        "servers_average": _num(result.servers_average),
        "resources": resource_rows(result),
        "compositions": result.runs,
        "split_compositions": result.split_runs,
        "unplaced": list(result.unplaced),
    }
