"""Names of the persona fixtures (tests/conftest.py), for parametrising over them."""

from __future__ import annotations

PERSONAS = ["admin_user", "alice", "bob", "carol"]
TENANTS = ["alice", "bob", "carol"]  # the tenant members: no operator among them
