"""What a link counts for when its fabric manager gives no latency: the one stated estimate.

Plain values and no imports, so that every layer shares it: the topology graph routes over
such links with it (`fabric.topology.load` marks them `latency_estimated`), and the placement
engine, whose pure modules import nothing that touches Django, says it used it.

Link latency is optional in what a driver reports (`fabric.drivers.base.LinkInfo`): a
manager that gives none leaves `latency_ns` 0. A single figure per hop makes shortest paths
over such links the fewest hops, and a latency ceiling a hop budget; explanations say the
latency is estimated from hop counts and name the figure, never a silent 0.
"""

from __future__ import annotations

__all__ = ["ESTIMATED_HOP_LATENCY_NS"]

# A switch traversal and its cable: within the 100-400 ns per link that managers which do
# report latency give for PCIe/CXL fabrics (host uplinks, enclosure links, inter-switch).
ESTIMATED_HOP_LATENCY_NS = 200
