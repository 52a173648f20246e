"""API tokens under real concurrency: eight OS processes sign one user in at once on
PostgreSQL, and the user still holds no more tokens than the limit, each revocation audited.

Skipped on SQLite (the `postgres` fixture says why); CI runs it on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest

from composer.models import ApiToken
from fabric.models import ChangeRecord
from tests.support import race
from tests.support.worker import run_race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PROCESSES = 8
LIMIT = 3


def test_eight_sign_ins_at_once_leave_the_user_no_more_tokens_than_the_limit(
    postgres: None, alice: Any
) -> None:
    jobs = [{"user": alice.pk, "limit": LIMIT} for _ in range(PROCESSES)]

    outcomes = run_race(race.token_issue_child, jobs)

    issued = sorted(token_id for token_id, _, _ in outcomes)
    assert len(set(issued)) == PROCESSES
    kept = set(ApiToken.objects.filter(user=alice).values_list("pk", flat=True))
    assert len(kept) == LIMIT and kept <= set(issued)
    records = ChangeRecord.objects.filter(target_type="api_token")
    assert records.filter(action="added").count() == PROCESSES
    revoked = {int(r.message.split()[2]) for r in records.filter(action="deleted")}
    assert revoked == set(issued) - kept
