"""Fabric managers from the console: add, change, enable or disable, delete, and test the
connection. One module per topic; the pages and the API call these, never the models.

- `input`: the rules for what an operator enters (one place for both surfaces' words);
- `write`: the audited writes;
- `probe`: the "Test connection" with a time limit.
"""

from __future__ import annotations

from fabric.services.managers.input import CredentialsInput, ManagerInput, manager_build
from fabric.services.managers.probe import ProbeOutcome, manager_test_connection
from fabric.services.managers.write import (
    DeleteCheck,
    ManagerInUse,
    manager_create,
    manager_delete,
    manager_delete_check,
    manager_set_enabled,
    manager_update,
)

__all__ = [
    "CredentialsInput",
    "DeleteCheck",
    "ManagerInUse",
    "ManagerInput",
    "ProbeOutcome",
    "manager_build",
    "manager_create",
    "manager_delete",
    "manager_delete_check",
    "manager_set_enabled",
    "manager_test_connection",
    "manager_update",
]
