"""The inventory pages in a real browser (headless Chromium): bars drawn, the device table
filtered through htmx, the device page, and what a tenant member may not see.

Screenshots of a realistic inventory are written to a temporary folder on every run, and to
docs/img/ (dashboard.png, devices.png, used by the README) when COMPOSER_SCREENSHOTS=1.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import JobStatus
from fabric.choices import (
    DeviceKind,
    DeviceState,
    EnclosureKind,
    Health,
    LinkState,
    PortRole,
    SwitchProtocol,
    SwitchTier,
)
from tests.factories.composer import JobFactory
from tests.factories.fabric import (
    DeviceFactory,
    EnclosureFactory,
    FabricManagerFactory,
    HostFactory,
    LinkFactory,
    PoolFactory,
    PortFactory,
    PowerFeedFactory,
    RackFactory,
    SwitchFactory,
    fabric_small,
)
from tests.support.screenshots import publish_screenshot

pytestmark = pytest.mark.browser


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def test_an_operator_and_a_tenant_member_use_the_inventory(
    login_page: Any, admin_user: Any, alice: Any
) -> None:
    expect = _expect()
    small = fabric_small()
    gpu = small.gpus[0]

    page = login_page(admin_user)
    # The dashboard draws one stacked bar per pool, with visible width.
    expect(page.locator("h1")).to_have_text("Dashboard")
    bars = page.locator("#pool-capacity .progress-stacked")
    expect(bars).to_have_count(2)
    free = bars.first.locator(".bar-free")
    assert free.bounding_box()["width"] > 50
    expect(page.locator("#fabric-summary")).to_be_visible()

    # The device table: ten devices, then only CXL memory after ticking the kind.
    page.click("nav >> text=Devices")
    rows = page.locator("#device-table tbody tr")
    expect(rows).to_have_count(10)
    page.click("#filter-kind summary")
    page.check("#filter-kind-cxl_memory")
    expect(rows).to_have_count(2)
    page.wait_for_url(lambda url: "kind=cxl_memory" in url)
    assert "model=" not in page.url  # empty fields stay out of the address
    expect(page.locator("#filter-summary-kind")).to_have_text("CXL memory")
    # Free text narrows further, still without a page load.
    page.fill("#id_q", "mem-a-1")
    expect(rows).to_have_count(1)
    page.wait_for_url(lambda url: "q=mem-a-1" in url)
    # A bad value from the address bar: 400, the error beside the field.
    response = page.goto("/fabric/devices/?kind=banana")
    assert response.status == 400
    expect(page.locator("#filter-error-kind")).to_contain_text("banana")

    # Sorting by a header, then the device page with its serial.
    page.goto("/fabric/devices/")
    page.click("#device-table th >> text=Name")
    page.wait_for_url(lambda url: "ordering=-name" in url)
    expect(rows.first).to_contain_text("mem-a-1")
    page.goto("/fabric/devices/")
    page.click(f"#device-table >> text={gpu.name}")
    expect(page.locator("#device-serial")).to_have_text(gpu.serial)
    expect(page.locator("#uplinks")).to_contain_text("sw-a")

    # The operator's navbar fits one row at 1,400 px; the fabric pages are one menu away.
    bar = "document.querySelector('nav.console-navbar > .container-fluid')"
    assert page.evaluate(f"{bar}.scrollWidth <= {bar}.clientWidth")
    expect(page.locator("nav >> text=Hosts")).to_be_hidden()
    page.click("#fabric-menu")
    page.click("nav >> text=Switches")
    page.wait_for_url(lambda url: url.endswith("/fabric/switches/"))
    expect(page.locator("#fabric-menu")).to_have_class(re.compile(r"\bactive\b"))
    page.click("#user-menu")
    expect(page.locator("nav .dropdown-menu >> text=API docs")).to_be_visible()

    # Alice (a tenant admin): no serial on the same page, and switches do not exist for her.
    tenant = login_page(alice)
    tenant.goto(f"/fabric/devices/{gpu.pk}/")
    expect(tenant.locator("#device-summary")).to_be_visible()
    assert gpu.serial not in tenant.content()
    expect(tenant.locator("#device-serial")).to_have_count(0)
    assert tenant.goto("/fabric/switches/").status == 404
    expect(tenant.locator("nav >> text=Switches")).to_have_count(0)


def test_logging_out_in_the_browser(login_page: Any, bob: Any) -> None:
    expect = _expect()
    page = login_page(bob)
    page.click("#user-menu")
    expect(page.locator("[aria-labelledby=user-menu]")).to_contain_text("Acme")
    page.click("#logout-button")
    page.wait_for_url(lambda url: "/accounts/login/" in url)
    page.goto("/")
    assert "/accounts/login/" in page.url


# WhiteNoise serves static files to the ASGI handler as a synchronous stream.
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning")
def test_screenshots_of_a_realistic_data_centre(
    asgi_login_page: Any, admin_user: Any, tmp_path: Path
) -> None:
    # On the ASGI server (websockets): the pages as they are used, live updates connected.
    expect = _expect()
    _realistic_data_centre()
    page = asgi_login_page(admin_user)
    expect(page.locator("#pool-capacity .progress-stacked")).to_have_count(5)
    shots = {"dashboard.png": "/", "devices.png": "/fabric/devices/?kind=gpu&per_page=25"}
    for name, url in shots.items():
        page.goto(url)
        expect(page.locator("#live-status")).to_have_attribute("data-status", "live")
        page.screenshot(path=str(tmp_path / name), full_page=False)
        assert (tmp_path / name).stat().st_size > 10_000
    for name in shots:
        publish_screenshot(tmp_path / name, name)


def _realistic_data_centre() -> None:
    """Four racks behind two spine switches: H100 and H200 chassis, CXL memory, NVMe, DPUs,
    with some devices bound, one GPU failed, a box in maintenance and a degraded link."""
    manager = FabricManagerFactory.create(
        name="hall-1-fm", endpoint="https://fm.hall-1.dc:8443", last_synced_at=timezone.now()
    )
    FabricManagerFactory(
        name="hall-2-fm",
        endpoint="https://fm.hall-2.dc:8443",
        last_synced_at=timezone.now() - timedelta(minutes=7),
    )
    pools = {
        "h100": PoolFactory(
            name="H100 SXM GPUs", slug="h100", kind=DeviceKind.GPU, model="H100 SXM"
        ),
        "h200": PoolFactory(name="H200 GPUs", slug="h200", kind=DeviceKind.GPU, model="H200 SXM"),
        "cxl": PoolFactory(name="CXL memory", slug="cxl", kind=DeviceKind.CXL_MEMORY),
        "nvme": PoolFactory(name="NVMe flash", slug="nvme", kind=DeviceKind.NVME),
        "dpu": PoolFactory(name="BlueField-3 DPUs", slug="dpu", kind=DeviceKind.DPU),
    }
    spines = [
        SwitchFactory(
            manager=manager,
            name=f"spine-{i}",
            tier=SwitchTier.SPINE,
            protocol=SwitchProtocol.CXL,
            external_id=f"spine-{i}",
        )
        for i in (1, 2)
    ]
    serial = iter(range(10_000))
    for r, rack_name in enumerate(["a01", "a02", "b01", "b02"]):
        rack = RackFactory(
            manager=manager, name=f"rack-{rack_name}", location=f"Hall 1, row {r // 2 + 1}"
        )
        feed = PowerFeedFactory(manager=manager, name=f"pdu-{rack_name}", rack=rack)
        leaf = SwitchFactory(
            manager=manager,
            name=f"leaf-{rack_name}",
            rack=rack,
            power_feed=feed,
            protocol=SwitchProtocol.PCIE if r < 2 else SwitchProtocol.CXL,
        )
        for spine in spines:
            LinkFactory(
                manager=manager,
                a_port=PortFactory(manager=manager, switch=leaf, role=PortRole.FABRIC),
                b_port=PortFactory(manager=manager, switch=spine, role=PortRole.FABRIC),
                latency_ns=180,
                bandwidth_gbps=128.0,
                state=LinkState.DEGRADED if (r, spine.name) == (2, "spine-2") else LinkState.UP,
            )
        hosts = [
            HostFactory(
                manager=manager,
                name=f"host-{rack_name}-{h}",
                rack=rack,
                power_feed=feed,
                cores=128,
                memory_gib=1024,
            )
            for h in range(1, 4)
        ]
        model, pool = ("H100 SXM", pools["h100"]) if r < 3 else ("H200 SXM", pools["h200"])
        chassis = EnclosureFactory(
            manager=manager,
            name=f"gpu-{rack_name}",
            rack=rack,
            power_feed=feed,
            kind=EnclosureKind.GPU_CHASSIS,
            slots=8,
        )
        for slot in range(8):
            bound = hosts[slot % 3] if slot < (6 if r % 2 == 0 else 3) else None
            DeviceFactory(
                manager=manager,
                name=f"gpu-{rack_name}-{slot}",
                enclosure=chassis,
                slot=slot,
                model=model,
                memory_gib=80 if r < 3 else 141,
                pool=pool,
                serial=f"1652{r}{next(serial):07d}",
                firmware="96.00.89.00.01",
                state=DeviceState.BOUND if bound else DeviceState.FREE,
                bound_host=bound,
            )
        if r in (0, 2):
            box = EnclosureFactory(
                manager=manager,
                name=f"cxl-{rack_name}",
                rack=rack,
                power_feed=feed,
                kind=EnclosureKind.CXL_MEMORY_BOX,
                slots=4,
                vendor="Samsung",
                model="CMM-B",
            )
            for slot in range(4):
                DeviceFactory(
                    manager=manager,
                    name=f"cxl-{rack_name}-{slot}",
                    enclosure=box,
                    slot=slot,
                    kind=DeviceKind.CXL_MEMORY,
                    vendor="Samsung",
                    model="CMM-D 512GB",
                    memory_gib=512,
                    pool=pools["cxl"],
                    serial=f"SMC{next(serial):08d}",
                    # Sliced whole for compositions on several hosts.
                    state=DeviceState.BOUND if slot == 0 else DeviceState.FREE,
                    allocated_gib=512 if slot == 0 else 0,
                )
        if r in (1, 3):
            jbof = EnclosureFactory(
                manager=manager,
                name=f"jbof-{rack_name}",
                rack=rack,
                power_feed=feed,
                kind=EnclosureKind.JBOF,
                slots=12,
                vendor="Supermicro",
                model="SSG-121E",
            )
            for slot in range(12):
                DeviceFactory(
                    manager=manager,
                    name=f"nvme-{rack_name}-{slot:02d}",
                    enclosure=jbof,
                    slot=slot,
                    kind=DeviceKind.NVME,
                    vendor="Kioxia",
                    model="CM7-R 7.68TB",
                    memory_gib=0,
                    capacity_gb=7680,
                    pool=pools["nvme"],
                    serial=f"KX{next(serial):08d}",
                    state=DeviceState.BOUND if slot < 5 else DeviceState.FREE,
                    bound_host=hosts[1] if slot < 5 else None,
                )
        io = EnclosureFactory(
            manager=manager,
            name=f"io-{rack_name}",
            rack=rack,
            power_feed=feed,
            kind=EnclosureKind.IO_CHASSIS,
            slots=4,
        )
        for slot in range(4):
            DeviceFactory(
                manager=manager,
                name=f"dpu-{rack_name}-{slot}",
                enclosure=io,
                slot=slot,
                kind=DeviceKind.DPU,
                vendor="NVIDIA",
                model="BlueField-3 B3240",
                memory_gib=32,
                pool=pools["dpu"],
                serial=f"MT{next(serial):08d}",
                state=DeviceState.RESERVED if slot == 0 and r == 1 else DeviceState.FREE,
            )
    from composer.models import Job
    from fabric.models import Device, Enclosure

    Device.objects.filter(name="gpu-a02-6").update(state=DeviceState.FAILED, health=Health.CRITICAL)
    Device.objects.filter(name__in=["gpu-b01-7", "nvme-b02-03"]).update(health=Health.WARNING)
    Device.objects.filter(name__startswith="cxl-b01-").exclude(name="cxl-b01-0").update(
        state=DeviceState.MAINTENANCE
    )
    Enclosure.objects.filter(name="cxl-b01").update(health=Health.WARNING)
    Device.objects.filter(name__startswith="dpu-b02").update(health=Health.UNKNOWN)
    now = timezone.now()
    for minutes, status, message in [  # newest last
        (42, JobStatus.SUCCEEDED, "80 devices, 12 hosts, 12 enclosures: 3 changed"),
        (12, JobStatus.FAILED, ""),
        (1, JobStatus.RUNNING, "Reading enclosures (7 of 12)"),
    ]:
        job = JobFactory.create(
            status=status,
            target_type="fabric_manager",
            target_id=manager.pk,
            target_label=manager.name if minutes != 12 else "hall-2-fm",
            message=message,
            error="DriverError: fabric manager unreachable (timeout after 30 s)"
            if not message
            else "",
            progress_done=7 if status == JobStatus.RUNNING else 12,
            progress_total=12,
            started_at=now - timedelta(minutes=minutes),
            finished_at=None
            if status == JobStatus.RUNNING
            else now - timedelta(minutes=minutes - 1),
        )
        Job.objects.filter(pk=job.pk).update(created_at=now - timedelta(minutes=minutes))
