"""Fixtures of the composer page tests."""

from __future__ import annotations

# The synchronised tiny simulated world of the composition service tests.
from tests.composer.services.conftest import driver, synced  # noqa: F401
