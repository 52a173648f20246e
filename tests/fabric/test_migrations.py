"""The fabric's migrations match its models: nothing left for makemigrations to write."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_fabric_models_need_no_new_migration() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "fabric", "--check", "--dry-run", stdout=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        pytest.fail(f"fabric needs a migration (exit {exc.code}):\n{out.getvalue()}")
