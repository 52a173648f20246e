"""The topology page in a real browser (headless Chromium): the graph drawn with Cytoscape.js,
a switch's failure domain and its blast radius, a host's paths and reach, and a fabric big
enough that enclosures collapse.

The README's screenshot (the demo, with a leaf switch's blast radius, on the ASGI server) is
written to docs/img/topology.png only when COMPOSER_SCREENSHOTS=1.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from fabric.choices import (
    DeviceKind,
    DeviceState,
    EnclosureKind,
    Health,
    PortRole,
    SwitchProtocol,
    SwitchTier,
)
from fabric.models import Device, Enclosure, FailureDomain, Host, Link, Port, Rack, Switch
from fabric.services.domains import domains_refresh
from tests.factories.fabric import FabricManagerFactory, SmallFabric, fabric_small
from tests.support.screenshots import publish_screenshot

pytestmark = pytest.mark.browser

READY = "() => window.composerTopology && window.composerTopology.ready === true"


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def _ids(page: Any, selector: str) -> set[str]:
    return set(
        page.evaluate(f"() => window.composerTopology.cy.$({selector!r}).map((e) => e.id())")
    )


def _click_node(page: Any, node_id: str) -> None:
    """Click a node where Cytoscape drew it, as a person would."""
    point = page.evaluate(
        """(id) => {
          const cy = window.composerTopology.cy;
          const p = cy.getElementById(id).renderedPosition();
          const box = cy.container().getBoundingClientRect();
          return {x: box.left + p.x, y: box.top + p.y};
        }""",
        node_id,
    )
    page.mouse.click(point["x"], point["y"])


def _open_topology(page: Any, url: str = "/fabric/topology/") -> None:
    page.goto(url)
    page.wait_for_function(READY)


def _small_with_domains() -> SmallFabric:
    small = fabric_small()
    # Some colour for the picture: a bound GPU, a failed one, a warning on the memory box.
    Device.objects.filter(pk=small.gpus[1].pk).update(
        state=DeviceState.BOUND, bound_host=small.hosts[0]
    )
    Device.objects.filter(pk=small.gpus[6].pk).update(
        state=DeviceState.FAILED, health=Health.CRITICAL
    )
    Enclosure.objects.filter(pk=small.enclosures[2].pk).update(health=Health.WARNING)
    domains_refresh(manager=small.manager)
    return small


def test_an_operator_explores_the_topology(
    login_page: Any, admin_user: Any, alice: Any, tmp_path: Path
) -> None:
    expect = _expect()
    small = _small_with_domains()
    sw_a, host_a = small.switches[0], small.hosts[0]
    gpu_a0 = small.gpus[0]
    page = login_page(admin_user)
    page.click("nav >> text=Topology")
    page.wait_for_url(lambda url: "/fabric/topology/" in url)
    page.wait_for_function(READY)

    # Every rack, switch, host, enclosure and device is drawn, racks and enclosures as boxes.
    cy = "window.composerTopology.cy"
    assert page.evaluate(f"() => {cy}.nodes().length") == 2 + 2 + 2 + 3 + 10
    assert page.evaluate(f"() => {cy}.edges().length") == len(small.links)
    assert page.evaluate(f"() => {cy}.getElementById('rack:{small.racks[0].pk}').isParent()")
    gpu_parent = f"() => {cy}.getElementById('device:{gpu_a0.pk}').parent().id()"
    assert page.evaluate(gpu_parent) == f"enclosure:{small.enclosures[0].pk}"
    expect(page.locator("#topology-counts")).to_contain_text("10 devices")
    # Coloured by health and use: the failed GPU is red, the bound one blue.
    failed_colour = (
        f"() => {cy}.getElementById('device:{small.gpus[6].pk}').style('background-color')"
    )
    assert page.evaluate(failed_colour) == "rgb(220,53,69)"
    bound_colour = (
        f"() => {cy}.getElementById('device:{small.gpus[1].pk}').style('background-color')"
    )
    assert page.evaluate(bound_colour) == "rgb(13,110,253)"
    # Nodes are spread out, not piled on one point.
    extent = page.evaluate(f"() => {cy}.nodes().boundingBox()")
    assert extent["w"] > 150 and extent["h"] > 100

    # Click sw-a: its details, a link to its page, then its failure domain's blast radius.
    _click_node(page, f"switch:{sw_a.pk}")
    expect(page.locator("#details-fields")).to_contain_text("sw-a")
    expect(page.locator("#details-open")).to_have_attribute("href", f"/fabric/switches/{sw_a.pk}/")
    page.click("#details-domain")
    page.wait_for_function(f"() => {cy}.$('.blast-failed').length > 0")
    failed = _ids(page, ".blast-failed")
    affected = _ids(page, ".blast-affected")
    assert f"switch:{sw_a.pk}" in failed
    assert {f"device:{g.pk}" for g in small.gpus[:4]} <= affected | failed
    assert f"host:{host_a.pk}" in affected | failed
    assert f"switch:{small.switches[1].pk}" not in affected | failed
    expect(page.locator("#blast-summary")).to_have_text("4 devices and 1 host lost")
    expect(page.locator("#blast-definition")).to_contain_text("Degraded: still reached")
    expect(page.locator("#blast-devices")).to_contain_text("gpu-a-0")
    sw_domain = FailureDomain.objects.get(key=f"switch:{sw_a.pk}")
    expect(page.locator(f"#domain-{sw_domain.pk}")).to_be_checked()
    assert f"domains={sw_domain.pk}" in page.url

    # The best path from host-a to gpu-a-0: host-a -> sw-a -> gpu-a, and sw-a is a single
    # point of failure.
    page.click("#result-clear")
    assert _ids(page, ".blast-failed") == set()
    page.select_option("#path-host", f"host:{host_a.pk}")
    page.select_option("#path-device", f"device:{gpu_a0.pk}")
    page.click("#path-show")
    page.wait_for_function(f"() => {cy}.$('edge.path-best').length > 0")
    assert _ids(page, "edge.path-best") == {
        f"link:{small.links[0].pk}",
        f"link:{small.links[1].pk}",
    }
    assert f"switch:{sw_a.pk}" in _ids(page, "node.path-node")
    expect(page.locator("#path-table tbody tr")).to_have_count(1)
    expect(page.locator("#path-table")).to_contain_text("370 ns")
    expect(page.locator("#path-spof")).to_contain_text("sw-a")

    # Reachable devices from host-a: its own rack's GPUs and rack B's over the inter-switch
    # link; the memory box has no uplink, so none of its devices.
    _click_node(page, f"host:{host_a.pk}")
    page.click("#details-reach")
    expect(page.locator("#reach-table tbody tr")).to_have_count(8)
    assert {f"device:{g.pk}" for g in small.gpus} <= _ids(page, ".reach")
    assert f"device:{small.memory[0].pk}" not in _ids(page, ".reach")

    # Search centres and selects a node.
    page.fill("#topology-search", "gpu-b-2")
    page.press("#topology-search", "Enter")
    page.wait_for_function(
        f"() => {cy}.$(':selected').map((n) => n.id()).includes('device:{small.gpus[6].pk}')"
    )
    expect(page.locator("#details-fields")).to_contain_text("gpu-b-2")

    # recolour() is what live events will call.
    page.evaluate(f"() => window.composerTopology.recolour('switch:{sw_a.pk}', 'critical')")
    assert (
        page.evaluate(f"() => {cy}.getElementById('switch:{sw_a.pk}').style('background-color')")
        == "rgb(220,53,69)"
    )

    # The rack filter reloads the graph with only rack B.
    page.select_option("#topology-rack", str(small.racks[1].pk))
    page.wait_for_function(
        f"() => window.composerTopology.ready && {cy}.getElementById('host:{host_a.pk}').empty()"
    )
    assert page.evaluate(f"() => {cy}.getElementById('host:{small.hosts[1].pk}').nonempty()")
    assert f"rack={small.racks[1].pk}" in page.url

    _screenshot(page, tmp_path)

    # A tenant member: no such page, no navbar entry.
    tenant = login_page(alice)
    assert tenant.goto("/fabric/topology/").status == 404
    expect(tenant.locator("nav >> text=Topology")).to_have_count(0)


def test_failure_domains_chosen_on_the_list_open_on_the_topology(
    login_page: Any, admin_user: Any
) -> None:
    expect = _expect()
    small = _small_with_domains()
    enc_a = FailureDomain.objects.get(key=f"enclosure:{small.enclosures[0].pk}")
    enc_b = FailureDomain.objects.get(key=f"enclosure:{small.enclosures[1].pk}")
    page = login_page(admin_user)
    page.click("#fabric-menu")
    page.click("nav >> text=Failure domains")
    page.check(f"#domain-{enc_a.pk}")
    page.check(f"#domain-{enc_b.pk}")
    expect(page.locator("#what-if-count")).to_have_text("2 chosen")
    page.click("#what-if-button")
    page.wait_for_url(lambda url: f"ids={enc_a.pk},{enc_b.pk}" in url)
    expect(page.locator("h1")).to_have_text("What if gpu-a and gpu-b fail?")
    expect(page.locator("#count-devices")).to_have_text("8")

    page.click("#what-if-topology")
    page.wait_for_url(lambda url: f"domains={enc_a.pk},{enc_b.pk}" in url)
    page.wait_for_function(READY)
    page.wait_for_function("() => window.composerTopology.cy.$('.blast-failed').length > 0")
    lit = _ids(page, ".blast-failed") | _ids(page, ".blast-affected")
    assert {f"device:{g.pk}" for g in small.gpus} <= lit
    assert {f"enclosure:{e.pk}" for e in small.enclosures[:2]} <= _ids(page, ".blast-failed")
    expect(page.locator("#blast-devices")).to_contain_text("gpu-b-3")


def test_a_fabric_of_more_than_two_thousand_nodes_draws_collapsed(
    login_page: Any, admin_user: Any
) -> None:
    _big_fabric(racks=12, enclosures_per_rack=16, devices_per_enclosure=12)
    page = login_page(admin_user)
    started = time.monotonic()
    page.goto("/fabric/topology/")
    page.wait_for_function(READY, timeout=60_000)
    elapsed = time.monotonic() - started
    cy = "window.composerTopology.cy"
    assert (
        page.evaluate("() => window.composerTopology.cy.nodes('[kind = \"device\"]').length") == 0
    )
    enclosures = page.evaluate(f"() => {cy}.nodes('[kind = \"enclosure\"]').length")
    assert enclosures == 12 * 16
    label = page.evaluate(f"() => {cy}.nodes('[kind = \"enclosure\"]')[0].data('label')")
    assert "12 dev" in label
    assert page.evaluate(f"() => {cy}.renderer().options.textureOnViewport") is True
    assert elapsed < 45, f"took {elapsed:.1f} s to draw"
    # The same fabric with every device drawn (the operator's choice) still draws.
    started = time.monotonic()
    page.select_option("#topology-collapse", "false")
    page.wait_for_function(
        f"() => window.composerTopology.ready && {cy}.nodes('[kind = \"device\"]').length > 0",
        timeout=90_000,
    )
    assert time.monotonic() - started < 60
    # Still usable: search finds an enclosure and zooming works.
    page.fill("#topology-search", "enc-r07-03")
    page.press("#topology-search", "Enter")
    page.wait_for_function(f"() => {cy}.$(':selected').length === 1")


def _big_fabric(*, racks: int, enclosures_per_rack: int, devices_per_enclosure: int) -> None:
    """A fabric of `racks` racks, each with a leaf switch, four hosts and its enclosures, the
    leaves joined to two spines (bulk-created: factories would take minutes)."""
    manager = FabricManagerFactory(name="fm-big")
    common = {"manager": manager, "health": Health.OK}
    spines = Switch.objects.bulk_create(
        [
            Switch(
                name=f"spine-{i}",
                external_id=f"spine-{i}",
                protocol=SwitchProtocol.CXL,
                tier=SwitchTier.SPINE,
                **common,
            )
            for i in (1, 2)
        ]
    )
    rack_rows = Rack.objects.bulk_create(
        [Rack(name=f"rack-{r:02d}", external_id=f"rack-{r:02d}", **common) for r in range(racks)]
    )
    leaves = Switch.objects.bulk_create(
        [
            Switch(
                name=f"leaf-{r:02d}",
                external_id=f"leaf-{r:02d}",
                protocol=SwitchProtocol.CXL,
                rack=rack,
                **common,
            )
            for r, rack in enumerate(rack_rows)
        ]
    )
    hosts = Host.objects.bulk_create(
        [
            Host(name=f"host-r{r:02d}-{h}", external_id=f"host-r{r:02d}-{h}", rack=rack, **common)
            for r, rack in enumerate(rack_rows)
            for h in range(4)
        ]
    )
    enclosures = Enclosure.objects.bulk_create(
        [
            Enclosure(
                name=f"enc-r{r:02d}-{e:02d}",
                external_id=f"enc-r{r:02d}-{e:02d}",
                kind=EnclosureKind.GPU_CHASSIS,
                rack=rack,
                slots=devices_per_enclosure,
                **common,
            )
            for r, rack in enumerate(rack_rows)
            for e in range(enclosures_per_rack)
        ]
    )
    Device.objects.bulk_create(
        [
            Device(
                name=f"{enc.name}-gpu{s}",
                external_id=f"{enc.external_id}-gpu{s}",
                kind=DeviceKind.GPU,
                enclosure=enc,
                slot=s,
                **common,
            )
            for enc in enclosures
            for s in range(devices_per_enclosure)
        ]
    )
    ports: list[tuple[Port, Port]] = []
    for r, leaf in enumerate(leaves):
        for spine in spines:
            ports.append(
                (
                    Port(
                        name=f"up-{spine.name}",
                        external_id=f"p-{leaf.name}-{spine.name}",
                        switch=leaf,
                        role=PortRole.FABRIC,
                        **common,
                    ),
                    Port(
                        name=f"down-{r}",
                        external_id=f"p-{spine.name}-{leaf.name}",
                        switch=spine,
                        role=PortRole.FABRIC,
                        **common,
                    ),
                )
            )
        for owner in [h for h in hosts if h.rack_id == leaf.rack_id] + [
            e for e in enclosures if e.rack_id == leaf.rack_id
        ]:
            field = "host" if isinstance(owner, Host) else "enclosure"
            ports.append(
                (
                    Port(
                        name=f"d-{owner.name}",
                        external_id=f"p-{leaf.name}-{owner.name}",
                        switch=leaf,
                        role=PortRole.DOWNSTREAM,
                        **common,
                    ),
                    Port(
                        name="up0",
                        external_id=f"p-{owner.name}",
                        role=PortRole.UPLINK,
                        **{field: owner},
                        **common,
                    ),
                )
            )
    Port.objects.bulk_create([p for pair in ports for p in pair])
    Link.objects.bulk_create(
        [
            Link(
                a_port=a,
                b_port=b,
                external_id=f"l-{a.external_id}",
                latency_ns=200,
                bandwidth_gbps=64.0,
                **common,
            )
            for a, b in ports
        ]
    )


def _screenshot(page: Any, tmp_path: Path) -> None:
    page.click("#result-clear")
    page.select_option("#topology-rack", "")
    page.wait_for_function(
        "() => window.composerTopology.ready && window.composerTopology.cy.nodes().length === 19"
    )
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(tmp_path / "topology.png"), full_page=False)
    assert (tmp_path / "topology.png").stat().st_size > 10_000


LABELS = """() => {
  const cy = window.composerTopology.cy;
  const labelOnly = { includeNodes: false, includeLabels: true, includeOverlays: false };
  const boxes = cy.nodes("[kind = 'host'], [kind = 'switch']").map((n) => {
    const b = n.renderedBoundingBox(labelOnly);
    return [n.id(), b.x1, b.y1, b.x2, b.y2];
  });
  const px = (n, name) => parseFloat(n.renderedStyle(name));
  const font = (sel) => Math.min(...cy.nodes(sel).map((n) => px(n, "font-size")));
  const device = cy.nodes("[kind = 'device']")[0];
  // Cytoscape draws a label when its size at the zoom rounded up to a power of two reaches
  // min-zoomed-font-size.
  const level = Math.pow(2, Math.ceil(Math.log2(cy.zoom() * window.devicePixelRatio)));
  return {
    zoom: cy.zoom(),
    positions: cy.nodes().filter((n) => !n.isParent())
      .map((n) => [n.id(), n.position("x"), n.position("y")]),
    boxes,
    fonts: {
      rack: font("[kind = 'rack']"), switch: font("[kind = 'switch']"),
      host: font("[kind = 'host']"), enclosure: font("[kind = 'enclosure']"),
    },
    deviceLabelShown: parseFloat(device.style("font-size")) * level
      >= parseFloat(device.style("min-zoomed-font-size")),
  };
}"""


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_the_demo_is_drawn_the_same_on_every_load_and_readable_at_fit(
    login_page: Any, admin_user: Any, width: int, height: int
) -> None:
    from fabric.simulator.console.demo import demo_seed

    demo_seed(users=False)
    page = login_page(admin_user)
    page.set_viewport_size({"width": width, "height": height})
    _open_topology(page)
    first = page.evaluate(LABELS)
    page.reload()
    page.wait_for_function(READY)
    second = page.evaluate(LABELS)

    # The same drawing on every load: every node where it was.
    assert first["positions"] == second["positions"]
    assert len(first["positions"]) == 4 + 16 + 144  # switches, hosts, devices (boxes frame)
    # Readable at the zoom that fits the whole demo: names at 10 px or more on screen, ...
    assert min(first["fonts"].values()) >= 10, first["fonts"]
    # ... and no two host or switch names on top of each other.
    for a, b in [(a, b) for i, a in enumerate(first["boxes"]) for b in first["boxes"][i + 1 :]]:
        apart = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
        assert apart, (a[0], b[0])
    # Device names (detail) wait until they can be read: zoomed in, not at fit on a laptop.
    assert first["deviceLabelShown"] is (first["zoom"] > 1)


# WhiteNoise serves static files to the ASGI handler as a synchronous stream.
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning")
def test_the_readme_screenshot_shows_a_leaf_switchs_blast_radius_on_the_demo(
    asgi_login_page: Any, admin_user: Any, tmp_path: Path
) -> None:
    from fabric.simulator.console.demo import demo_seed

    expect = _expect()
    demo = demo_seed(users=False).manager
    leaf = FailureDomain.objects.get(manager=demo, name="cxl-leaf-a")
    page = asgi_login_page(admin_user)
    _open_topology(page, f"/fabric/topology/?domains={leaf.pk}")
    page.wait_for_function("() => window.composerTopology.cy.$('.blast-failed').length > 0")
    expect(page.locator("#blast-summary")).to_have_text("40 devices and 8 hosts lost")
    expect(page.locator("#live-status")).to_have_attribute("data-status", "live")
    page.screenshot(path=str(tmp_path / "topology.png"), full_page=False)
    assert (tmp_path / "topology.png").stat().st_size > 10_000
    publish_screenshot(tmp_path / "topology.png", "topology.png")
