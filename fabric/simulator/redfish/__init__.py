"""The simulated fabric manager's world served as a standard DMTF Redfish service.

The same state as the simulated driver (the Simulated* tables): what the Redfish driver
reads here, binds and unbinds goes through the simulator's own store and bind rule, so its
latencies, injected faults, persistence and sharing between processes apply over HTTP.
`server.serve_world(fabric_name)` serves it; `manage.py simulator_redfish` runs it.
"""
