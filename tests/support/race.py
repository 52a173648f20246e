"""Child processes for the allocation race tests (spawned: no Django import at module level).

Each child sets up Django on the test database named by the parent, waits at a barrier so
that all of them start together, makes one claim or request, and reports what it got.
"""

from __future__ import annotations

import os
from typing import Any


def _setup(database_url: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "composer.settings.test"
    os.environ["DATABASE_URL"] = database_url
    os.environ["COMPOSER_TEST_EAGER"] = "1"
    import django

    django.setup()


def request_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`composition_request` for tenant `job["tenant"]`; reports (pk, state, error)."""
    _setup(database_url)
    from django.db import connection

    from composer.models import Tenant
    from composer.services.compositions import composition_request

    tenant = Tenant.objects.get(pk=job["tenant"])
    barrier.wait(timeout=60)
    try:
        composition = composition_request(
            tenant=tenant, requested_by=None, spec=job["spec"], name=job["name"]
        )
        results.put((composition.pk, composition.state, ""))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put((None, None, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def claim_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`allocations_claim` of `job["claims"]` ([device_id, gib] or [device_id, gib, share])
    for composition `job["composition"]` on its host; reports (composition, granted,
    error)."""
    _setup(database_url)
    from django.db import connection

    from composer.errors import ClaimConflict
    from composer.models import Composition
    from composer.services.allocations import Claim, allocations_claim

    composition = Composition.objects.select_related("host").get(pk=job["composition"])
    claims = [Claim(*claim) for claim in job["claims"]]
    barrier.wait(timeout=60)
    try:
        allocations_claim(composition=composition, claims=claims, host=composition.host)
        results.put((composition.pk, True, ""))
    except ClaimConflict:
        results.put((composition.pk, False, ""))
    except Exception as exc:
        results.put((composition.pk, False, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def release_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`allocations_release` of every allocation of composition `job["composition"]`;
    reports (composition, released count, error)."""
    _setup(database_url)
    from django.db import connection

    from composer.models import Composition
    from composer.services.allocations import allocations_release

    composition = Composition.objects.get(pk=job["composition"])
    barrier.wait(timeout=60)
    try:
        results.put((composition.pk, allocations_release(composition=composition), ""))
    except Exception as exc:
        results.put((composition.pk, 0, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def claim_or_release_child(
    database_url: str, barrier: Any, results: Any, job: dict[str, Any]
) -> None:
    """`release_child` when the job says `release`, else `claim_child`."""
    child = release_child if job.get("release") else claim_child
    child(database_url, barrier, results, job)


def release_twice_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`allocations_release` of one allocation, `job["allocation"]`, of composition
    `job["composition"]` (the same in every child); reports (composition, released, error)."""
    _setup(database_url)
    from django.db import connection

    from composer.models import Composition
    from composer.services.allocations import allocations_release

    composition = Composition.objects.get(pk=job["composition"])
    barrier.wait(timeout=60)
    try:
        released = allocations_release(composition=composition, only=[job["allocation"]])
        results.put((composition.pk, released, ""))
    except Exception as exc:
        results.put((composition.pk, 0, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def decompose_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`composition_decompose` of composition `job["composition"]`, its job run eagerly
    after commit in this process; reports (composition, its state after, error)."""
    _setup(database_url)
    from django.db import connection

    from composer.models import Composition
    from composer.services.compositions import composition_decompose

    composition = Composition.objects.get(pk=job["composition"])
    barrier.wait(timeout=60)
    try:
        composition_decompose(composition=composition, actor=None)
        composition.refresh_from_db()
        results.put((composition.pk, composition.state, ""))
    except Exception as exc:
        results.put((composition.pk, None, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def token_issue_child(database_url: str, barrier: Any, results: Any, job: dict[str, Any]) -> None:
    """`api_token_issue` for user `job["user"]`, at most `job["limit"]` tokens a user;
    reports (token id, None, error)."""
    os.environ["COMPOSER_API_TOKENS_PER_USER"] = str(job["limit"])
    _setup(database_url)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from composer.services.api_tokens import api_token_issue

    user = get_user_model().objects.get(pk=job["user"])
    barrier.wait(timeout=60)
    try:
        token = api_token_issue(user=user, remote_addr=None).token
        results.put((token.pk, None, ""))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put((None, None, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()
