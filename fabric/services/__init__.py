"""Writes of the fabric domain: inventory sync, pools, failure domains, maintenance, alerts.

Fault injection writes the simulated manager's state, so it lives beside that driver
(`faults.py` in `fabric/simulator/`); what it aims at is resolved here
(`fault_targets`).

Import the functions from their modules (`fabric.services.sync.inventory_sync`); this
package re-exports nothing so that importing one service does not import them all.
"""
