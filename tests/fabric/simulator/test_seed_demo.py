"""seed_demo: the demo data centre of the issue, learnt by discovery, and idempotent."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from composer.choices import Role
from composer.models import Membership, Tenant
from fabric.choices import EnclosureKind, SwitchTier
from fabric.models import (
    ChangeRecord,
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Pool,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.simulator.models import SimulatedElement

# Bookkeeping a sync refreshes every time by design; everything else must stay as it was.
VOLATILE = {"last_seen_at", "last_synced_at"}


def _snapshot() -> dict[str, list[tuple[Any, ...]]]:
    models = [
        *apps.get_app_config("fabric").get_models(),
        *apps.get_app_config("simulated_fabric").get_models(),
        *apps.get_app_config("composer").get_models(),
    ]
    models.append(get_user_model())
    snapshot = {}
    for model in models:
        fields = [f.attname for f in model._meta.concrete_fields if f.name not in VOLATILE]
        rows = model._default_manager.values_list(*fields)
        snapshot[model.__name__] = sorted(map(tuple, rows), key=repr)
    return snapshot


@pytest.fixture
def seeded(db: None, settings: Any) -> None:
    settings.COMPOSER_DEMO_PASSWORD = "s3cret-demo"
    call_command("seed_demo", verbosity=0)


@pytest.mark.usefixtures("seeded")
def test_the_demo_has_the_sizes_the_issue_asks_for() -> None:
    assert list(Rack.objects.values_list("name", flat=True)) == ["rack-a", "rack-b"]
    assert Counter(PowerFeed.objects.values_list("rack__name", flat=True)) == {
        "rack-a": 2,
        "rack-b": 2,
    }
    assert Switch.objects.count() == 4
    assert Counter(Switch.objects.values_list("tier", flat=True)) == {
        SwitchTier.SPINE: 2,
        SwitchTier.LEAF: 2,
    }
    assert Host.objects.count() == 16
    assert {h.cores for h in Host.objects.all()} <= {64, 96, 128}
    assert all(512 <= h.memory_gib <= 1024 for h in Host.objects.all())

    gpus = Device.objects.filter(kind="gpu")
    assert gpus.count() == 64
    assert Counter(gpus.values_list("model", flat=True)) == {"H100 PCIe 80GB": 32, "L40S 48GB": 32}
    chassis = Enclosure.objects.filter(kind=EnclosureKind.GPU_CHASSIS)
    assert chassis.count() == 8 and {c.devices.count() for c in chassis} == {8}
    assert gpus.filter(name="gpu-a-01-3", enclosure__name="gpu-a-01").exists()

    boxes = Enclosure.objects.filter(kind=EnclosureKind.CXL_MEMORY_BOX)
    assert boxes.count() == 8
    assert {sum(d.memory_gib for d in box.devices.all()) for box in boxes} == {2048}
    jbofs = Enclosure.objects.filter(kind=EnclosureKind.JBOF)
    assert jbofs.count() == 4 and {j.devices.count() for j in jbofs} == {8}
    assert set(Device.objects.filter(kind="nvme").values_list("capacity_gb", flat=True)) == {7680}
    nics = Device.objects.filter(kind="nic")
    assert nics.count() == 16 and set(nics.values_list("model", flat=True)) == {"ConnectX-7 400GbE"}
    assert Device.objects.exclude(serial="").count() == Device.objects.count()


@pytest.mark.usefixtures("seeded")
def test_the_demo_fabric_is_a_leaf_spine_with_realistic_links() -> None:
    for leaf in Switch.objects.filter(tier=SwitchTier.LEAF):
        spines = set(
            Link.objects.filter(b_port__switch=leaf).values_list("a_port__switch__name", flat=True)
        )
        assert spines == {"cxl-spine-1", "cxl-spine-2"}, leaf.name
    host_links = Link.objects.filter(b_port__host__isnull=False)
    assert host_links.count() == 16
    assert all(100 <= link.latency_ns <= 150 for link in host_links)
    fabric_links = Link.objects.filter(a_port__switch__isnull=False, b_port__switch__isnull=False)
    assert all(200 <= link.latency_ns <= 400 for link in fabric_links)
    assert set(Link.objects.values_list("bandwidth_gbps", flat=True)) == {63.0}
    # Memory boxes are dual-homed: losing one spine keeps every box reachable.
    for box in Enclosure.objects.filter(kind=EnclosureKind.CXL_MEMORY_BOX):
        assert Link.objects.filter(b_port__enclosure=box).count() == 2


@pytest.mark.usefixtures("seeded")
def test_the_demo_manager_users_tenants_and_pools_are_there() -> None:
    manager = FabricManager.objects.get(name="demo")
    assert (manager.driver, manager.settings) == ("simulated", {"fabric": "demo"})
    assert manager.last_synced_at is not None

    users = {u.username: u for u in get_user_model().objects.all()}
    assert users["admin"].is_staff and users["admin"].is_superuser
    assert not users["alice"].is_staff
    for user in users.values():
        assert user.check_password("s3cret-demo")
    roles = set(Membership.objects.values_list("user__username", "tenant__name", "role"))
    assert roles == {
        ("alice", "Acme", Role.ADMIN),
        ("bob", "Acme", Role.READONLY),
        ("carol", "Globex", Role.MEMBER),
    }
    assert set(Tenant.objects.values_list("name", flat=True)) == {"Acme", "Globex"}

    assert Pool.objects.get(name="H100 GPUs, rack A").devices.count() == 16
    assert Pool.objects.get(name="CXL memory, rack B").devices.count() == 16
    assert not Device.objects.filter(pool__isnull=True).exists()


@pytest.mark.usefixtures("seeded")
def test_the_console_learnt_the_fabric_by_discovery() -> None:
    assert SimulatedElement.objects.filter(fabric__name="demo").count() > 0
    device = Device.objects.get(name="gpu-a-01-3")
    assert device.first_seen_at is not None
    assert ChangeRecord.objects.filter(
        target_type="device", target_id=device.pk, action="added", source="seed_demo"
    ).exists()


@pytest.mark.usefixtures("seeded")
def test_running_it_again_changes_nothing_and_duplicates_nothing() -> None:
    before = _snapshot()
    call_command("seed_demo", verbosity=0)
    assert _snapshot() == before


def test_no_sync_writes_only_the_simulated_world(db: None) -> None:
    call_command("seed_demo", "--no-sync", "--no-users", verbosity=0)
    assert SimulatedElement.objects.filter(fabric__name="demo", kind="device").count() == 144
    assert FabricManager.objects.filter(name="demo").exists()
    assert not Device.objects.exists() and not Pool.objects.exists()
    assert not get_user_model().objects.exists()


def test_sizes_and_names_are_options(db: None) -> None:
    call_command(
        "seed_demo",
        "--racks",
        "1",
        "--hosts",
        "2",
        "--gpu-enclosures",
        "1",
        "--gpus-per-enclosure",
        "4",
        "--memory-boxes",
        "1",
        "--jbofs",
        "0",
        "--nics",
        "2",
        "--manager",
        "lab",
        "--fabric",
        "lab",
        "--no-users",
        verbosity=0,
    )
    manager = FabricManager.objects.get(name="lab")
    assert Device.objects.filter(manager=manager, kind="gpu").count() == 4
    assert Device.objects.filter(manager=manager).count() == 4 + 4 + 2
    assert Rack.objects.get().name == "rack-a"


def test_a_large_fabric_can_be_generated_by_device_count(db: None) -> None:
    call_command(
        "seed_demo",
        "--devices",
        "600",
        "--no-users",
        "--fabric",
        "big",
        "--manager",
        "big",
        verbosity=0,
    )
    assert Device.objects.filter(manager__name="big").count() == 600


def test_bad_sizes_are_refused_naming_the_option(db: None) -> None:
    with pytest.raises(CommandError, match="racks"):
        call_command("seed_demo", "--racks", "0", verbosity=0)


@pytest.mark.usefixtures("seeded")
def test_the_demo_has_the_issues_templates_and_each_fits_the_empty_demo_fabric() -> None:
    from composer.models import Quota, Template
    from composer.placement.request import Placement
    from composer.services.compositions import composition_preview

    templates = {t.slug: t for t in Template.objects.all()}
    assert {"training-8gpu", "inference-2gpu-bigmem"} <= set(templates)
    assert len(templates) >= 4 and all(t.is_active for t in templates.values())
    training = templates["training-8gpu"].spec
    assert training["items"] == [
        {"kind": "gpu", "model": "H100 PCIe 80GB", "count": 8, "minima": {}}
    ]
    assert (training["same_switch"], training["cores"], training["storage_tb"]) == (True, 32, 4)
    assert training["self_heal"] is True  # it opts in to self-heal
    bigmem = templates["inference-2gpu-bigmem"].spec
    assert bigmem["items"][0]["count"] == 2 and bigmem["memory_gib"] == 1024
    assert bigmem["max_latency_ns"] == 600
    acme = Tenant.objects.get(slug="acme")
    for template in templates.values():
        outcome = composition_preview(tenant=acme, spec=template.spec)
        assert isinstance(outcome, Placement), (template.slug, outcome)
    assert set(Quota.objects.values_list("tenant__slug", flat=True)) == {"acme", "globex"}


def test_a_second_seed_changes_no_template_or_quota(db: None, settings: Any) -> None:
    from fabric.simulator.console.demo import demo_seed

    settings.COMPOSER_DEMO_PASSWORD = "s3cret-demo"
    first = demo_seed(sync=False)
    second = demo_seed(sync=False)
    assert first.templates_changed and first.quotas_changed
    assert (second.templates_changed, second.quotas_changed) == ([], [])


def test_the_demo_seeds_the_server_shapes_from_the_machine_list_once(
    db: None, settings: Any, tmp_path: Any
) -> None:
    from composer.models import ServerShape
    from fabric.simulator.console.demo import demo_seed

    listing = tmp_path / "pai_machine_spec.csv"
    listing.write_text("m1,MISC,96,512,8\nm2,MISC,96,512,8\nm3,CPU,96,512,0\n")
    settings.COMPOSER_SERVER_SHAPES_CSV = str(listing)
    first = demo_seed(sync=False)
    second = demo_seed(sync=False)
    assert first.server_shapes is not None and len(first.server_shapes.added) == 2
    assert second.server_shapes is not None and second.server_shapes.added == ()
    misc = ServerShape.objects.get(name="PAI MISC 8x 96c 512 GiB")
    assert (misc.gpu_model, misc.machines) == ("", 2)  # MISC: GPUs of any model


def test_without_the_machine_list_the_demo_says_so_and_seeds_no_shapes(
    db: None, settings: Any, tmp_path: Any
) -> None:
    from io import StringIO

    from composer.models import ServerShape

    settings.COMPOSER_SERVER_SHAPES_CSV = str(tmp_path / "absent.csv")
    out = StringIO()
    call_command("seed_demo", "--no-sync", "--no-users", stdout=out)
    assert "Server shapes: no machine list" in out.getvalue()
    assert not ServerShape.objects.exists()
