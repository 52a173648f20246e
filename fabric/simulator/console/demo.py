"""The demo data centre: a simulated fabric, its manager, demo users and tenants, pools.

The fabric is written into the *simulated manager's* tables only; the console learns it
through inventory sync, as it would a real one. It also creates the demo templates and the
demo tenants' quotas, and seeds the server-shape catalogue from Alibaba's PAI machine list
when it lies beside the repository (`composer.counterfactual.machine_spec`). Everything here
is idempotent: running it again with the same sizes changes nothing and duplicates nothing.

Part of the simulator's console (`fabric.simulator`): it writes the simulated manager's
tables directly (`fabric.simulator.builder`), which only a simulator allows.
`manage.py seed_demo` and the benchmarks call `demo_seed`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from composer.counterfactual.machine_spec import machine_spec_path
from composer.demo_users import DEMO_TENANTS, DEMO_USERS
from composer.models import Membership, Quota, Template, Tenant
from composer.recurrence import schedule_normalise
from composer.services.server_shapes import SeedOutcome, server_shapes_seed
from composer.specs import spec_normalise
from fabric.models import FabricManager
from fabric.services.pools import pools_assign, pools_ensure_defaults
from fabric.services.sync import SyncResult, inventory_sync
from fabric.simulator.builder import WorldSpec, WorldWriteResult, world_write

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DemoTemplate:
    """A demo template; its spec is stored normalised. A default schedule (recurrence,
    local start and end) is kept in the console's time zone (TIME_ZONE)."""

    slug: str
    description: str
    spec: dict[str, Any]
    schedule: dict[str, str] = field(default_factory=dict)


# Each fits the empty demo fabric (tests/fabric/simulator/test_seed_demo.py previews every one).
# CXL memory boxes hang off the spines (host link 100-150 ns, switch hop 200-400 ns, box
# link 150-250 ns), so the 600 ns ceiling holds from some hosts, not all; placement
# picks one that meets it, and the test proves one exists.
DEMO_TEMPLATES: tuple[DemoTemplate, ...] = (
    DemoTemplate(
        "training-8gpu",
        "8 GPUs of one model behind one switch, 32 cores and 4 TB of NVMe: a training node "
        "that heals itself (a failed GPU is replaced from a spare behind the same switch).",
        {
            "items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 8}],
            "same_switch": True,
            "cores": 32,
            "storage_tb": 4,
            # A lost GPU is replaced from a spare behind the same switch (composer.services.heal).
            "self_heal": True,
        },
        # Training by day (the demo's history books it: fabric.simulator.console.history).
        {"recurrence": "weekdays", "starts": "08:00", "ends": "20:00"},
    ),
    DemoTemplate(
        "inference-2gpu-bigmem",
        "2 GPUs and 1 TiB of CXL memory within 600 ns: large-model inference.",
        {
            "items": [{"kind": "gpu", "count": 2}],
            "memory_gib": 1024,
            "max_latency_ns": 600,
            "cores": 16,
        },
        # Inference by night, on what the day's training gave back.
        {"recurrence": "daily", "starts": "20:00", "ends": "08:00"},
    ),
    DemoTemplate(
        "dev-1gpu",
        "One L40S and 8 cores: a development box.",
        {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "cores": 8},
    ),
    DemoTemplate(
        "notebook-gpu-share",
        "A quarter of one GPU (250 thousandths) and 4 cores, shared with others on its host: "
        "a notebook.",
        {"items": [{"kind": "gpu", "share": 250}], "cores": 4},
    ),
    DemoTemplate(
        "analytics-bigmem",
        "2 TiB of CXL memory, 2 TB of NVMe and 32 cores: in-memory analytics, no GPUs.",
        {"memory_gib": 2048, "storage_tb": 2, "cores": 32},
    ),
    DemoTemplate(
        "training-4gpu-spread",
        "4 H100s spread over two or more enclosures (survives a chassis failure).",
        {
            "items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 4}],
            "policy": "enclosure",
            "cores": 16,
        },
    ),
)

# (tenant slug, kind, model, max_count, max_memory_gib, max_storage_tb)
DEMO_QUOTAS: tuple[tuple[str, str, str, int | None, int | None, float | None], ...] = (
    ("acme", "gpu", "", 24, None, None),
    ("acme", "cxl_memory", "", None, 6144, None),
    ("acme", "nvme", "", None, None, 40.0),
    ("globex", "gpu", "", 8, None, None),
    ("globex", "gpu", "H100 PCIe 80GB", 4, None, None),
    ("globex", "cxl_memory", "", None, 2048, None),
    ("globex", "nvme", "", None, None, 8.0),
)


@dataclass
class DemoSeedResult:
    """What `demo_seed` created or changed (empty lists on an idempotent rerun)."""

    world: WorldWriteResult
    manager: FabricManager
    manager_changed: bool
    tenants_created: list[str] = field(default_factory=list)
    users_created: list[str] = field(default_factory=list)
    users_changed: list[str] = field(default_factory=list)
    memberships_changed: list[str] = field(default_factory=list)
    pools_created: list[str] = field(default_factory=list)
    devices_moved: int = 0
    templates_changed: list[str] = field(default_factory=list)
    quotas_changed: list[str] = field(default_factory=list)
    sync: SyncResult | None = None
    # The server-shape catalogue from Alibaba's PAI machine list; None when the list is absent.
    server_shapes: SeedOutcome | None = None


def demo_manager_ensure(*, manager_name: str, fabric_name: str) -> tuple[FabricManager, bool]:
    """Create or update the FabricManager that uses the simulated driver on `fabric_name`.

    Other keys in its settings (an operator's additions) are kept. Returns (manager,
    whether anything was written).
    """
    manager = FabricManager.objects.filter(name=manager_name).first()
    wanted_settings = {"fabric": fabric_name}
    if manager is None:
        manager = FabricManager(
            name=manager_name,
            driver="simulated",
            endpoint=f"sim://{fabric_name}",
            settings=wanted_settings,
            poll_interval_s=30,
        )
        manager.full_clean()
        manager.save()
        logger.info("fabric manager %s created", manager_name)
        return manager, True
    merged = {**(manager.settings or {}), **wanted_settings}
    if manager.driver == "simulated" and manager.settings == merged:
        return manager, False
    manager.driver = "simulated"
    manager.endpoint = f"sim://{fabric_name}"
    manager.settings = merged
    manager.full_clean()
    manager.save()
    logger.info("fabric manager %s pointed at simulated fabric %s", manager_name, fabric_name)
    return manager, True


def demo_users_ensure(*, result: DemoSeedResult) -> None:
    """Create the demo tenants and users, and keep their flags, roles and password as designed.

    The password (COMPOSER_DEMO_PASSWORD) is only re-hashed when it no longer matches, so
    a rerun writes nothing.
    """
    user_model = get_user_model()
    password = settings.COMPOSER_DEMO_PASSWORD
    tenants: dict[str, Tenant] = {}
    for name, slug in DEMO_TENANTS:
        tenant, created = Tenant.objects.get_or_create(slug=slug, defaults={"name": name})
        tenants[slug] = tenant
        if created:
            result.tenants_created.append(name)
    for spec in DEMO_USERS:
        user = user_model.objects.filter(username=spec.username).first()
        if user is None:
            user = user_model(username=spec.username, first_name=spec.first_name, email=spec.email)
            user.is_staff = user.is_superuser = spec.is_operator
            user.set_password(password)
            user.save()
            result.users_created.append(spec.username)
        else:
            dirty = []
            if user.is_staff != spec.is_operator or user.is_superuser != spec.is_operator:
                user.is_staff = user.is_superuser = spec.is_operator
                dirty += ["is_staff", "is_superuser"]
            if not user.is_active:
                user.is_active = True
                dirty.append("is_active")
            if not user.check_password(password):
                user.set_password(password)
                dirty.append("password")
            if dirty:
                user.save(update_fields=dirty)
                result.users_changed.append(spec.username)
        if spec.tenant_slug and spec.role:
            membership, created = Membership.objects.get_or_create(
                user=user, tenant=tenants[spec.tenant_slug], defaults={"role": spec.role}
            )
            if created or membership.role != spec.role:
                if membership.role != spec.role:
                    membership.role = spec.role
                    membership.save(update_fields=["role", "updated_at"])
                result.memberships_changed.append(f"{spec.username}@{spec.tenant_slug}")


def demo_catalog_ensure(*, result: DemoSeedResult) -> None:
    """Create the demo templates and the demo tenants' quotas, or put them back as designed.

    A rerun writes nothing. Quotas of tenants that do not exist (users=False) are skipped.
    """
    for demo in DEMO_TEMPLATES:
        spec = spec_normalise(demo.spec)
        schedule = (
            schedule_normalise({**demo.schedule, "time_zone": settings.TIME_ZONE})
            if demo.schedule
            else {}
        )
        wanted = {
            "name": demo.slug,
            "description": demo.description,
            "spec": spec,
            "schedule": schedule,
        }
        template = Template.objects.filter(slug=demo.slug).first()
        if template is None:
            Template.objects.create(slug=demo.slug, is_active=True, **wanted)
        elif any(getattr(template, k) != v for k, v in wanted.items()):
            for name, value in wanted.items():
                setattr(template, name, value)
            template.save()
        else:
            continue
        result.templates_changed.append(demo.slug)
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in={q[0] for q in DEMO_QUOTAS})}
    for slug, kind, model, count, gib, tb in DEMO_QUOTAS:
        if slug not in tenants:
            continue
        wanted_limits = {"max_count": count, "max_memory_gib": gib, "max_storage_tb": tb}
        quota, created = Quota.objects.get_or_create(
            tenant=tenants[slug], kind=kind, model=model, defaults=wanted_limits
        )
        if not created:
            if all(getattr(quota, k) == v for k, v in wanted_limits.items()):
                continue
            for field, limit in wanted_limits.items():
                setattr(quota, field, limit)
            quota.save()
        result.quotas_changed.append(f"{slug}:{kind}:{model or '*'}")


def demo_seed(
    *,
    spec: WorldSpec | None = None,
    manager_name: str = "demo",
    fabric_name: str = "demo",
    sync: bool = True,
    users: bool = True,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> DemoSeedResult:
    """Build (or converge) the demo data centre; see the module docstring.

    Steps: write the simulated world; create/update the manager; the demo tenants and
    users; unless `sync` is false, an inventory sync through the same service the workers
    use, then the default pools (one per kind, model and rack) and pool assignment.
    Raises ValueError naming a bad size, DriverError when the sync cannot read the fabric.
    """
    spec = spec or WorldSpec()
    world = world_write(fabric_name=fabric_name, spec=spec)
    logger.info(
        "simulated fabric %s: %d created, %d updated, %d removed",
        fabric_name,
        world.created,
        world.updated,
        world.removed,
    )
    with transaction.atomic():
        manager, manager_changed = demo_manager_ensure(
            manager_name=manager_name, fabric_name=fabric_name
        )
        result = DemoSeedResult(world=world, manager=manager, manager_changed=manager_changed)
        if users:
            demo_users_ensure(result=result)
        demo_catalog_ensure(result=result)
    shapes_path = machine_spec_path()
    if shapes_path is not None:
        result.server_shapes = server_shapes_seed(path=shapes_path, source="seed_demo")
    if sync:
        result.sync = inventory_sync(manager=manager, on_progress=on_progress, source="seed_demo")
        result.pools_created = [p.name for p in pools_ensure_defaults(manager=manager)]
        result.devices_moved = pools_assign(manager=manager, source="seed_demo")
    return result
