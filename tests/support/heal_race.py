"""A child process for the heal race test (spawned: no Django import at module level).

It sets up Django on the test database named by the parent, waits at the barrier with the
other racers, runs one heal job in-process and reports how it ended.
"""

from __future__ import annotations

from typing import Any

from tests.support.race import _setup


def heal_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """Run heal job `job["job"]`; reports (job id, job status, error)."""
    _setup(database_url)
    from django.db import connection

    from composer.models import Job
    from composer.services.heal import composition_heal_run

    row = Job.objects.get(pk=job["job"])
    barrier.wait(timeout=60)
    try:
        composition_heal_run(row, retryable=False)
        results.put((row.pk, row.status, ""))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put((row.pk, None, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()
