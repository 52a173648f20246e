"""Fabric: the physical world — inventory, topology, failure domains, health and drivers.

Fabric stands alone: it never imports `composer`.
"""
