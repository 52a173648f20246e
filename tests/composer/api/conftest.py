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
