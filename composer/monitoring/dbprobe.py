"""One quick look at the database before a scrape or a readiness probe reads it.

With the database away, every query of a web process waits for a pooled connection for
COMPOSER_DB_POOL_TIMEOUT_S (10 s by default) before it fails: /metrics, with its several
families, took about a minute and /readyz about twenty seconds, longer than Prometheus's
scrape timeout and a load balancer's probe. So the database is asked once, on a connection
of its own that gives up after COMPOSER_MONITORING_DB_TIMEOUT_S, and when that fails every
family and check that needs the database fails at once, named, without querying.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections

logger = logging.getLogger(__name__)

__all__ = ["database_probe"]


def _connect_params() -> dict[str, Any]:
    """The default database's connection parameters, less the pool's."""
    params: dict[str, Any] = connections["default"].get_connection_params()
    params["connect_timeout"] = max(1, int(settings.COMPOSER_MONITORING_DB_TIMEOUT_S))
    return params


def database_probe() -> str | None:
    """None when the database answers `SELECT 1` within the timeout, else the error's
    type name (never its message: it may carry an address or a user name)."""
    wrapper = connections["default"]
    driver: Any = getattr(wrapper, "Database", None)  # the DB-API module (psycopg)
    try:
        if wrapper.vendor != "postgresql":
            with wrapper.cursor() as cursor:  # SQLite: a file, nothing to wait for
                cursor.execute("SELECT 1")
            return None
        # Not through the pool (which would wait for its own timeout): a connection of
        # its own, closed at once, with libpq's connect timeout.
        with driver.connect(**_connect_params()) as raw:
            raw.execute("SELECT 1")
    except (DatabaseError, driver.Error) as exc:
        logger.debug("database probe failed", exc_info=True)
        return type(exc).__name__
    return None
