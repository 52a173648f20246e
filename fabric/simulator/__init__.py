"""The simulated fabric manager, and the ways it is served (its own API, Redfish)."""
