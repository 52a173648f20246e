"""How a link is named, wherever the console shows one: the topology and failure-domain
pages, alerts and health changes, the fault page's suggestions and what it accepts.

A link is named by the two things it joins, `cxl-spine-1 <-> mem-a-01`; where another link
of the same fabric joins the same two (parallel links), both are named with their ports,
`cxl-spine-1:p03 <-> mem-a-01:p0`, so that no two links share a name. Pure: each caller
reads the ends its own way (model rows, a values query, the topology graph).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from typing import TypeVar

__all__ = ["End", "link_names"]

End = tuple[str, str]  # (the name of the switch, host or enclosure, the port's name)
K = TypeVar("K", bound=Hashable)


def link_names(ends: Mapping[K, tuple[End, End]]) -> dict[K, str]:
    """Each link's name, by key, from its two ends: the owners where no other link of
    `ends` joins the same two, else the owners with their ports."""
    shared = Counter(frozenset((a[0], b[0])) for a, b in ends.values())
    names: dict[K, str] = {}
    for key, (a, b) in ends.items():
        if shared[frozenset((a[0], b[0]))] > 1:
            names[key] = f"{a[0]}:{a[1]} <-> {b[0]}:{b[1]}"
        else:
            names[key] = f"{a[0]} <-> {b[0]}"
    return names
