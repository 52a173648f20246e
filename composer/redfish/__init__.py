"""Composer's Redfish service: the whole data centre as one DMTF Redfish Composition
Service at `/redfish/v1/`, so tools that speak Redfish compose through Composer with no
Composer-specific code.

`views.serve` answers every request: it authenticates (`sessions`), finds the route
(`routes`), applies the query (`queries`) and the ETag rules, and writes the answer or
the Redfish error. Each resource family renders from Composer's own tables for the
caller (`caller.Caller`): a tenant sees its own systems, tasks, reservations and events,
and only the free blocks it may draw from; operators see everything. Payloads are built
with `fabric.redfish_render`, the project's one way of writing Redfish.
"""
