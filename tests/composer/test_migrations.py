"""Data migrations of composer, run on rows as an older release left them."""

from __future__ import annotations

import hashlib
import importlib
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from rest_framework.test import APIClient

from composer.choices import AllocationState
from composer.models import Allocation, ApiToken, Composition, StateChange
from fabric.choices import DeviceState
from fabric.models import Device
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db

backfill = importlib.import_module("composer.migrations.0005_device_allocated_gib")
notes = importlib.import_module("composer.migrations.0007_placement_notes")


def test_memory_devices_get_the_gib_and_the_state_of_the_slices_held_before(acme: Any) -> None:
    fabric = fabric_small()
    reserved_only, bound, maintained = fabric.memory[0], fabric.memory[1], fabric.gpus[0]
    Device.objects.filter(pk=maintained.pk).update(
        kind="cxl_memory", memory_gib=512, state=DeviceState.MAINTENANCE
    )
    building = Composition.objects.create(tenant=acme, name="building", spec={})
    ready = Composition.objects.create(tenant=acme, name="ready", spec={})
    Allocation.objects.create(composition=building, device=reserved_only, gib=300)
    Allocation.objects.create(composition=ready, device=bound, gib=200, state="bound")
    Allocation.objects.create(composition=ready, device=maintained, gib=64, state="bound")
    # A slice released by a heal whose unbind failed: still on the fabric, still held.
    pending = Allocation.objects.create(
        composition=ready,
        device=bound,
        gib=100,
        state=AllocationState.RELEASED,
        released_at=timezone.now(),
    )
    Composition.objects.filter(pk=ready.pk).update(
        placement={"unbind_pending": [{"allocation": pending.pk, "binding_id": "b-1"}]}
    )
    released = Composition.objects.create(tenant=acme, name="gone", spec={})
    Allocation.objects.create(
        composition=released,
        device=reserved_only,
        gib=500,
        state=AllocationState.RELEASED,
        released_at=timezone.now(),
    )

    backfill.backfill_allocated_gib(apps, None)
    backfill.backfill_allocated_gib(apps, None)  # idempotent

    figures = dict(Device.objects.filter(kind="cxl_memory").values_list("name", "allocated_gib"))
    states = dict(Device.objects.filter(kind="cxl_memory").values_list("name", "state"))
    assert figures == {reserved_only.name: 300, bound.name: 300, maintained.name: 64}
    assert states == {
        reserved_only.name: DeviceState.RESERVED,
        bound.name: DeviceState.BOUND,
        maintained.name: DeviceState.MAINTENANCE,  # an operator's state is kept
    }


LIVE_NAME = "0006_composition_live_name"


@pytest.mark.django_db(transaction=True)
def test_duplicate_live_names_are_numbered_before_the_unique_index(acme: Any, globex: Any) -> None:
    """A tenant's live compositions that share a name keep it on the oldest; the others get
    the first free number, each rename audited; released ones and other tenants' keep
    theirs."""
    before = [("composer", "0005_device_allocated_gib")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps.get_model("composer", "Composition")
        start = timezone.now() - timedelta(hours=1)
        made = {}
        for minute, (tenant, name, state) in enumerate(
            [
                (acme, "llm", "ready"),
                (acme, "llm", "degraded"),
                (acme, "llm-2", "ready"),  # the first number is taken: the next is used
                (acme, "llm", "released"),  # not live: keeps its name
                (acme, "llm", "requested"),
                (globex, "llm", "ready"),  # another tenant's
                (acme, "n" * 100, "ready"),
                (acme, "n" * 100, "ready"),  # cut to make room for the number
            ]
        ):
            row = old.objects.create(tenant_id=tenant.pk, name=name, state=state, spec={})
            old.objects.filter(pk=row.pk).update(created_at=start + timedelta(minutes=minute))
            made[minute] = row.pk
        executor = MigrationExecutor(connection)
        executor.migrate([("composer", LIVE_NAME)])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    names = dict(Composition.objects.values_list("pk", "name"))
    assert [names[made[i]] for i in range(8)] == [
        "llm",
        "llm-3",
        "llm-2",
        "llm",
        "llm-4",
        "llm",
        "n" * 100,
        "n" * 98 + "-2",
    ]
    audit = StateChange.objects.order_by("pk")
    assert [(c.composition_id, c.from_state, c.to_state, c.source) for c in audit] == [
        (made[1], "degraded", "degraded", "migration composer 0006"),
        (made[4], "requested", "requested", "migration composer 0006"),
        (made[7], "ready", "ready", "migration composer 0006"),
    ]
    assert audit[0].reason == (
        "Renamed from llm to llm-3: names are unique among a tenant's live compositions"
    )


@pytest.mark.parametrize(
    ("stored", "tenant"),
    [
        (
            "2 of 2 devices sit behind the host's own switch (cxl-leaf-a); mean path latency "
            "420 ns.",
            "2 of 2 devices sit behind the host's own switch; mean path latency 420 ns.",
        ),
        (
            "Host host-a-02: 40 cores free, 16 asked; host balance penalty 3.1 (snug core fit "
            "and the cores-per-GPU ratio left in its reach, fabric ratio 160.0).",
            "Host host-a-02: 40 cores free, 16 asked.",
        ),
        (
            "6 of 8 GPUs fit behind switch cxl-leaf-b; relax 'same switch' or wait.",
            "6 of 8 GPUs fit behind one switch; relax 'same switch' or wait.",
        ),
    ],
)
@pytest.mark.django_db(False)
def test_a_stored_sentence_gets_a_tenants_rendering_without_fabric_internals(
    stored: str, tenant: str
) -> None:
    assert notes._note(stored) == {"operator": stored, "tenant": tenant}


@pytest.mark.django_db(False)
def test_a_sentence_both_audiences_read_alike_stays_a_string() -> None:
    assert notes._note("Score 82.0 of 100.") == "Score 82.0 of 100."


plain_tokens = importlib.import_module("composer.migrations.0031_api_tokens")


@pytest.mark.parametrize("created", ["2025-03-04 05:06:07.000008", "2025-03-04T05:06:07.000008Z"])
def test_plain_api_tokens_become_digests_that_still_work(alice: Any, created: str) -> None:
    """DRF's authtoken table, as a release before digests left it: each key is carried over
    as its SHA-256 (and still signs in), and the table of keys in the clear is dropped."""
    key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamp with time zone NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token (key, created, user_id) VALUES (%s, %s, %s)",
            [key, created, alice.pk],
        )
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, %s)",
            ["authtoken", "0001_initial", timezone.now()],
        )
        editor = SimpleNamespace(connection=connection, execute=cursor.execute)
        plain_tokens.digest_plain_tokens(apps, editor)
        plain_tokens.digest_plain_tokens(apps, editor)  # the table is gone: nothing to do
    assert "authtoken_token" not in connection.introspection.table_names()
    with connection.cursor() as cursor:  # a release that has it again makes it afresh
        cursor.execute("SELECT count(*) FROM django_migrations WHERE app = 'authtoken'")
        assert cursor.fetchone() == (0,)
    token = ApiToken.objects.get()
    assert token.key_sha256 == hashlib.sha256(key.encode()).hexdigest()
    assert token.created_at == datetime(2025, 3, 4, 5, 6, 7, 8, tzinfo=UTC)
    assert token.user == alice
    assert token.last_used_at is None and token.name == "carried over from an earlier release"
    response = APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/")
    assert response.status_code == 200
