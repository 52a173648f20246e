"""The fabric's migrations match its models (nothing left for makemigrations to write), and
an upgrade leaves no stored figure of an older definition standing."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from fabric.models import FabricManager, FailureDomain
from fabric.services.domains import domains_refresh_outdated
from fabric.services.sync import inventory_sync


@pytest.mark.django_db
def test_the_fabric_models_need_no_new_migration() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "fabric", "--check", "--dry-run", stdout=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        pytest.fail(f"fabric needs a migration (exit {exc.code}):\n{out.getvalue()}")


@pytest.mark.django_db(transaction=True)
def test_an_upgrade_recounts_the_domains_stored_under_the_old_definition(
    sim_manager: FabricManager, admin_user: Any, client: Client
) -> None:
    """0005 added the degraded columns and kept the member counts of the old definition:
    0006 marks such rows (they cannot be recounted with a migration's historical models),
    the list says they are being recounted rather than showing them, and the recount the
    beat runs every minute writes the blast radius, without an inventory sync."""
    inventory_sync(manager=sim_manager)
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("fabric", "0005_failure_domain_degraded_counts")])
        old = executor.loader.project_state(
            [("fabric", "0005_failure_domain_degraded_counts")]
        ).apps
        # As the old definition counted it: its members (the dual-homed memory box, the
        # JBOF's drives), nothing degraded.
        old.get_model("fabric", "FailureDomain").objects.filter(name="cxl-spine-1").update(
            device_count=3, host_count=3, devices_degraded_count=0, hosts_degraded_count=0
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    spine = FailureDomain.objects.get(manager=sim_manager, name="cxl-spine-1")
    assert spine.radius_version == 0 and spine.counts_outdated
    client.force_login(admin_user)
    page = client.get(reverse("fabric:failure_domain_list"), {"q": "cxl-spine-1"})
    row = page.content.decode().split(f'value="{spine.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "being recounted" in row and "domain-lost-devices" not in row

    (recounted,) = domains_refresh_outdated()
    assert recounted.updated == recounted.domains  # every row 0006 found: its version is new
    spine.refresh_from_db()
    assert not spine.counts_outdated
    assert spine.headline == "nothing lost; 3 devices and 3 hosts degraded"
    assert domains_refresh_outdated() == []
