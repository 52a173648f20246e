"""Fixtures of the composer API tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_throttles() -> Iterator[None]:
    """Throttle counters live in the cache; each test starts with none used."""
    cache.clear()
    yield
    cache.clear()


# The synchronised tiny simulated world of the composition service tests.
from tests.composer.services.conftest import driver, synced  # noqa: E402, F401
