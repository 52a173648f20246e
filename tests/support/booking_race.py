"""Child processes for the booking race tests (spawned: no Django import at module level).

Each child sets up Django on the test database named by the parent, waits at a barrier so
that all of them start together, books (or writes holds), and reports what it got.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any


def _setup(database_url: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "composer.settings.test"
    os.environ["DATABASE_URL"] = database_url
    os.environ["COMPOSER_TEST_EAGER"] = "1"
    import django

    django.setup()


def book_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`booking_request` of job["spec"] for tenant job["tenant"] over job["window"] (two ISO
    times); reports (booking id or None, refused, error)."""
    _setup(database_url)
    from django.db import connection

    from composer.errors import BookingRefused
    from composer.models import Tenant
    from composer.services.bookings import booking_request

    tenant = Tenant.objects.get(pk=job["tenant"])
    start, end = (datetime.fromisoformat(t) for t in job["window"])
    barrier.wait(timeout=60)
    try:
        booking = booking_request(
            tenant=tenant,
            requested_by=None,
            name=job["name"],
            spec=job["spec"],
            starts_at=start,
            ends_at=end,
        )
        results.put((booking.pk, False, ""))
    except BookingRefused:
        results.put((None, True, ""))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put((None, False, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def holds_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`holds_write` of one hold (job: occurrence, device, window, gib) in a transaction of
    its own, with no placement lock: only the database keeps rule 7. Reports (occurrence,
    granted, error)."""
    _setup(database_url)
    from django.db import connection, transaction

    from composer.errors import ClaimConflict
    from composer.models import BookingHold
    from composer.services.booking_holds import holds_write

    start, end = (datetime.fromisoformat(t) for t in job["window"])
    hold = BookingHold(
        occurrence_id=job["occurrence"],
        device_id=job["device"],
        starts_at=start,
        ends_at=end,
        gib=job.get("gib"),
    )
    barrier.wait(timeout=60)
    try:
        with transaction.atomic():
            holds_write([hold])
        results.put((job["occurrence"], True, ""))
    except ClaimConflict:
        results.put((job["occurrence"], False, ""))
    except Exception as exc:
        results.put((job["occurrence"], False, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()
