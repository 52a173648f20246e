"""Links: the cables (or traces) between two ports, with latency, bandwidth and state."""

from __future__ import annotations

from django.db import models

from fabric.choices import LinkState
from fabric.models.base import DiscoveredModel

# What a link's two ends belong to, as lookups from the link: what searches and filters on
# "either end" join, and what a list of links selects with its rows.
LINK_END_OWNERS = tuple(
    f"{end}__{owner}" for end in ("a_port", "b_port") for owner in ("switch", "host", "enclosure")
)


class Link(DiscoveredModel):
    """A link between two ports. Its latency and bandwidth decide which paths placement may use.

    `bandwidth_gbps` is in gigabytes per second (GB/s), one direction.
    """

    a_port = models.ForeignKey("fabric.Port", on_delete=models.CASCADE, related_name="links_as_a")
    b_port = models.ForeignKey("fabric.Port", on_delete=models.CASCADE, related_name="links_as_b")
    latency_ns = models.PositiveIntegerField(default=0)
    bandwidth_gbps = models.FloatField(default=0.0)
    state = models.CharField(max_length=12, choices=LinkState.choices, default=LinkState.UP)
    is_present = models.BooleanField(default=True)

    class Meta(DiscoveredModel.Meta):
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.a_port} <-> {self.b_port}"
