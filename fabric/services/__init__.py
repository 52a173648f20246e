"""Writes of the fabric domain: inventory sync, pool assignment, fault injection.

Import the functions from their modules (`fabric.services.sync.inventory_sync`); this
package re-exports nothing so that importing one service does not import them all.
"""
