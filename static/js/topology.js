// The fabric topology page: Cytoscape.js draws the JSON of /api/v1/topology/ (the same JSON
// fabric/topology/render.py builds), and the side panel asks the paths and failure-domain
// endpoints what a node reaches, how a host reaches a device, and what a failure takes with it.
// Plain script, no framework. Everything the tests and the live updates need is on
// `window.composerTopology`.
"use strict";

(() => {
  const root = document.getElementById("topology");
  if (!root || typeof window.cytoscape !== "function" || !window.composerTopologyLayout) {
    return;
  }

  // --- Configuration and small helpers ---------------------------------------------------

  const api = {
    topology: root.dataset.apiTopology,
    domains: root.dataset.apiDomains,
    impactMany: root.dataset.apiImpact,
    paths: root.dataset.apiPaths,
  };
  const whatIfPage = root.dataset.whatIfUrl;
  const layoutHelpers = window.composerTopologyLayout; // static/js/topology_layout.js
  const canvas = document.getElementById("topology-canvas");
  const $ = (id) => document.getElementById(id);

  // Above this many nodes the canvas trades crispness for speed while panning and zooming.
  const BIG_GRAPH = 600;

  const HEALTH_COLOURS = {
    ok: "#20a35a",
    warning: "#e0a800",
    critical: "#dc3545",
    unknown: "#adb5bd",
  };
  const STATE_COLOURS = {
    free: "#20a35a",
    bound: "#0d6efd",
    reserved: "#6f42c1",
    failed: "#dc3545",
    maintenance: "#6c757d",
    absent: "#ffffff",
  };
  const KIND_ICONS = {
    rack: "bi-hdd-rack",
    host: "bi-pc",
    switch: "bi-diagram-2",
    enclosure: "bi-hdd-stack",
    device: "bi-gpu-card",
    link: "bi-arrow-left-right",
  };
  // Attributes shown first (in this order) in the details panel; the rest follow sorted.
  const KNOWN_FIELDS = ["id", "kind", "label", "parent", "health", "state", "url", "source", "target"];

  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  };
  const pkOf = (nodeId) => String(nodeId).split(":").pop();
  const kindOf = (nodeId) => String(nodeId).split(":")[0];
  const fmtNs = (ns) => (ns === null || ns === undefined ? "—" : `${Number(ns).toLocaleString()} ns`);
  const fmtGbps = (g) =>
    g === null || g === undefined ? "—" : `${Number(g).toLocaleString(undefined, { maximumFractionDigits: 1 })} GB/s`;
  // Binary sizes as the console's pages write them: 256 GiB, 1.25 TiB.
  const fmtGib = (g) => (g >= 1024 ? `${Number((g / 1024).toFixed(2))} TiB` : `${g} GiB`);
  const title = (text) => String(text).replace(/_/g, " ").replace(/^\w/, (c) => c.toUpperCase());
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || `${one}s`}`;
  const capital = (text) => String(text).charAt(0).toUpperCase() + String(text).slice(1);
  const badge = (value, colours) =>
    el("span", { class: "topo-badge", style: `--badge: ${colours[value] || "#adb5bd"}` }, title(value || "unknown"));

  class ApiError extends Error {
    constructor(status, body) {
      super((body && (body.detail || body.code)) || `The server answered ${status}.`);
      this.status = status;
      this.body = body;
    }
  }

  async function getJson(url) {
    const response = await fetch(url, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      body = null;
    }
    if (!response.ok) {
      throw new ApiError(response.status, body);
    }
    return body;
  }

  function withQuery(base, params) {
    const url = new URL(base, window.location.origin);
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
    }
    return url.pathname + url.search;
  }

  function showError(where, error) {
    const box = $(where);
    if (!box) return;
    box.textContent = error ? error.message || String(error) : "";
    box.hidden = !error;
  }

  // --- Cytoscape style ---------------------------------------------------------------------

  function buildStyle() {
    const style = [
      {
        selector: "node",
        style: {
          label: "data(label)",
          "font-size": 10,
          "font-family": "Helvetica Neue, Helvetica, Arial, sans-serif",
          color: "#212529",
          "text-valign": "bottom",
          "text-halign": "center",
          "text-margin-y": 3,
          "text-wrap": "wrap",
          "text-max-width": 90,
          // Labels smaller than this on screen are not drawn: a zoomed-out 2,000-node graph
          // stays fast and readable.
          "min-zoomed-font-size": 6,
          "background-color": HEALTH_COLOURS.unknown,
          "border-width": 1,
          "border-color": "#495057",
          width: 26,
          height: 26,
        },
      },
      { selector: "node[kind = 'switch']", style: { shape: "diamond", width: 42, height: 42, "font-size": 12, "font-weight": 600 } },
      { selector: "node[kind = 'host']", style: { shape: "round-rectangle", width: 44, height: 28, "font-size": 11 } },
      { selector: "node[kind = 'device']", style: { shape: "ellipse", width: 16, height: 16, "font-size": 8, "text-max-width": 60, "border-width": 2 } },
      // A collapsed enclosure (no device children drawn) is one node whose label has counts.
      { selector: "node[kind = 'enclosure']:childless", style: { shape: "barrel", width: 48, height: 34, "font-size": 10 } },
      {
        selector: "node[kind = 'rack']",
        style: {
          shape: "round-rectangle",
          "background-color": "#f8f9fb",
          "background-opacity": 0.8,
          "border-width": 1.5,
          "border-style": "dashed",
          "border-color": "#8c96a3",
          "text-valign": "top",
          "text-halign": "center",
          "text-margin-y": -4,
          "font-size": 14,
          "font-weight": 700,
          color: "#495057",
          padding: 18,
        },
      },
      {
        selector: "node[kind = 'enclosure']:parent",
        style: {
          shape: "round-rectangle",
          "background-color": "#eef1f5",
          "background-opacity": 0.9,
          "border-width": 2,
          "text-valign": "top",
          "text-margin-y": -2,
          "font-size": 10,
          "font-weight": 600,
          padding: 8,
        },
      },
    ];
    // Health colours the fill of switches, hosts and collapsed enclosures, and the border of
    // racks, expanded enclosures and devices (whose fill says how they are used).
    for (const [health, colour] of Object.entries(HEALTH_COLOURS)) {
      style.push({ selector: `node[health = '${health}'][kind != 'device']:childless`, style: { "background-color": colour } });
      style.push({ selector: `node[health = '${health}']:parent, node[health = '${health}'][kind = 'device']`, style: { "border-color": colour } });
    }
    style.push({ selector: "node[kind = 'device'][health = 'ok']", style: { "border-color": "#146c3a" } });
    style.push({ selector: "node[kind = 'device'][health != 'ok']", style: { "border-width": 3 } });
    for (const [state, colour] of Object.entries(STATE_COLOURS)) {
      style.push({ selector: `node[kind = 'device'][state = '${state}']`, style: { "background-color": colour } });
    }
    // CXL memory is handed out in slices: a memory device in use is a pie of the GiB its
    // slices hold (the state's colour) over what is still free (green).
    style.push({
      selector: "node[kind = 'device'][allocated_gib > 0][memory_gib > 0][state = 'bound'], node[kind = 'device'][allocated_gib > 0][memory_gib > 0][state = 'reserved']",
      style: {
        "background-color": STATE_COLOURS.free,
        "pie-size": "100%",
        "pie-1-background-color": (ele) => STATE_COLOURS[ele.data("state")],
        "pie-1-background-size": (ele) => Math.min(100, (100 * ele.data("allocated_gib")) / ele.data("memory_gib")),
      },
    });
    style.push(
      { selector: "node[state = 'maintenance'][kind != 'device']", style: { "border-style": "dotted", "border-width": 3 } },
      {
        selector: "edge",
        style: {
          width: "mapData(bandwidth_gbps, 0, 256, 1.5, 5)",
          "line-color": "#9aa5b1",
          "curve-style": "bezier",
          opacity: 0.85,
          "font-size": 8,
          "min-zoomed-font-size": 7,
          "text-background-color": "#ffffff",
          "text-background-opacity": 0.85,
          "text-background-padding": 1,
        },
      },
      { selector: "edge[state = 'degraded']", style: { "line-color": HEALTH_COLOURS.warning, "line-style": "dashed" } },
      { selector: "edge[state = 'down']", style: { "line-color": HEALTH_COLOURS.critical, "line-style": "dashed" } },
      // Selection, search, reach, paths and blast radius.
      { selector: ":selected", style: { "overlay-color": "#0d6efd", "overlay-opacity": 0.18, "overlay-padding": 5 } },
      { selector: ".faded", style: { opacity: 0.18 } },
      { selector: ".reach", style: { "border-color": "#0dcaf0", "border-width": 4, opacity: 1 } },
      { selector: "node.path-node", style: { "border-color": "#0d6efd", "border-width": 4, opacity: 1 } },
      { selector: "edge.path-alt", style: { "line-color": "#6ea8fe", width: 3, "line-style": "dashed", opacity: 1 } },
      {
        selector: "edge.path-best",
        style: { "line-color": "#0d6efd", width: 6, opacity: 1, label: "data(latency_label)", "z-index": 10 },
      },
      { selector: ".spof", style: { "underlay-color": "#dc3545", "underlay-opacity": 0.25, "underlay-padding": 6 } },
      { selector: "node.blast-affected", style: { "background-color": "#fd7e14", "border-color": "#c35a00", "border-width": 3, opacity: 1 } },
      { selector: "node.blast-affected:parent", style: { "background-color": "#ffe5d0" } },
      { selector: "node.blast-failed", style: { "background-color": "#dc3545", "border-color": "#8b0000", "border-width": 4, opacity: 1 } },
      { selector: "node.blast-failed:parent", style: { "background-color": "#f8d7da" } },
      { selector: "edge.blast-failed", style: { "line-color": "#dc3545", width: 5, "line-style": "solid", opacity: 1 } },
      { selector: "edge.blast-affected", style: { "line-color": "#fd7e14", width: 4, opacity: 1 } },
      { selector: ".search-hit", style: { "overlay-color": "#ffc107", "overlay-opacity": 0.35, "overlay-padding": 8 } },
    );
    return [...style, ...layoutHelpers.labelStyle()];
  }

  // --- The graph ---------------------------------------------------------------------------

  const state = {
    cy: null,
    graph: null,
    domains: null, // every failure domain, loaded on first need
    selectedDomains: new Set(),
    pathHost: null, // node id
    ready: false,
    loads: 0,
  };

  function layoutOptions(big) {
    return {
      name: "fcose",
      quality: big ? "draft" : "default",
      randomize: true,
      animate: false,
      fit: true,
      padding: 24,
      nodeDimensionsIncludeLabels: !big,
      packComponents: true,
      nodeRepulsion: () => 6500,
      idealEdgeLength: () => (big ? 40 : 70),
      edgeElasticity: () => 0.45,
      nestingFactor: 0.1,
      gravity: 0.3,
      gravityCompound: 1.2,
      tile: true,
      numIter: big ? 1200 : 2500,
    };
  }

  function prepare(graph) {
    layoutHelpers.shortLabels(graph);
    // Derived data the style uses: a latency label on each link, counts on collapsed boxes.
    for (const edge of graph.edges || []) {
      const d = edge.data;
      // An estimate (the manager gives no latency for the link) is never shown as measured.
      const about = d.latency_estimated ? "~" : "";
      d.latency_label = d.latency_ns !== undefined ? `${about}${d.latency_ns} ns` : "";
    }
    for (const node of graph.nodes || []) {
      const d = node.data;
      if (d.kind === "enclosure" && d.device_count !== undefined && graph.collapsed) {
        const parts = [`${d.device_count} dev`];
        if (d.devices_bound) parts.push(`${d.devices_bound} bound`);
        if (d.devices_failed) parts.push(`${d.devices_failed} failed`);
        if (d.memory_gib) parts.push(`${fmtGib(d.allocated_gib)} of ${fmtGib(d.memory_gib)} allocated`);
        d.label = `${d.name || d.label}\n${parts.join(" · ")}`;
      }
    }
    return [...(graph.nodes || []), ...(graph.edges || [])];
  }

  async function load() {
    const params = currentFilters();
    const loadNumber = ++state.loads;
    state.ready = false;
    window.composerTopology.ready = false;
    root.dataset.ready = "false";
    showError("topology-error", null);
    $("topology-loading").hidden = false;
    let graph;
    try {
      graph = await getJson(withQuery(api.topology, params));
    } catch (error) {
      $("topology-loading").hidden = true;
      showError("topology-error", error);
      return;
    }
    if (loadNumber !== state.loads) return; // a newer filter change won
    state.graph = graph;
    const elements = prepare(graph);
    // A collapsed graph stands for a big fabric: draw it the cheap way too.
    const big = graph.collapsed || (graph.nodes || []).length > BIG_GRAPH;
    if (state.cy) state.cy.destroy();
    // The JSON places every node (fabric/topology/layout.py): the same drawing on every load.
    const preset = layoutHelpers.hasPositions(graph);
    const cy = cytoscape({
      container: canvas,
      elements,
      style: buildStyle(),
      // Without positions, spread out before the force layout runs, so no edge is ever
      // drawn between two nodes sitting on the same point.
      layout: preset ? { name: "preset", fit: false } : { name: "grid" },
      minZoom: 0.05,
      maxZoom: 4,
      boxSelectionEnabled: false,
      // Cheap drawing for big graphs: a bitmap while the viewport moves, one device pixel.
      textureOnViewport: big,
      hideEdgesOnViewport: big,
      pixelRatio: big ? 1 : "auto",
      motionBlur: false,
    });
    state.cy = cy;
    window.composerTopology.cy = cy;
    bindGraphEvents(cy);
    renderCounts(graph);
    $("topology-empty").hidden = (graph.nodes || []).length > 0;
    fillPathSelects();
    fillSearchList();
    const finish = () => {
      layoutHelpers.fit(cy);
      $("topology-loading").hidden = true;
      state.ready = true;
      window.composerTopology.ready = true;
      root.dataset.ready = "true";
      root.dispatchEvent(new CustomEvent("topology:ready", { detail: { counts: graph.counts } }));
      if (state.selectedDomains.size) showBlastRadius();
    };
    if (preset) {
      finish();
      return;
    }
    const layout = cy.layout(layoutOptions(big));
    layout.one("layoutstop", finish);
    layout.run();
  }

  function currentFilters() {
    return {
      manager: $("topology-manager").value,
      rack: $("topology-rack").value,
      collapse: $("topology-collapse").value,
    };
  }

  function syncAddress() {
    const url = new URL(window.location.href);
    const filters = currentFilters();
    for (const key of ["manager", "rack", "collapse"]) {
      if (filters[key]) url.searchParams.set(key, filters[key]);
      else url.searchParams.delete(key);
    }
    if (state.selectedDomains.size) url.searchParams.set("domains", [...state.selectedDomains].join(","));
    else url.searchParams.delete("domains");
    window.history.replaceState(null, "", url.pathname + url.search);
  }

  function renderCounts(graph) {
    const counts = graph.counts || {};
    const parts = ["racks", "switches", "hosts", "enclosures", "devices", "links"]
      .filter((k) => counts[k] !== undefined)
      .map((k) => `${counts[k]} ${k}`);
    $("topology-counts").textContent = parts.join(" · ") + (graph.collapsed ? " · enclosures collapsed" : "");
    $("topology-collapsed-note").hidden = !graph.collapsed;
  }

  function bindGraphEvents(cy) {
    cy.on("tap", "node, edge", (event) => showDetails(event.target));
    cy.on("tap", (event) => {
      if (event.target === cy) clearDetails();
    });
  }

  // --- Recolour (live updates) -----------------------------------------------------------------

  function recolour(nodeId, health, nodeState) {
    const cy = state.cy;
    if (!cy) return false;
    const ele = cy.getElementById(nodeId);
    if (ele.empty()) return false;
    const update = {};
    if (health) update.health = health;
    if (nodeState) update.state = nodeState;
    ele.data(update);
    if (ele.selected()) showDetails(ele);
    return true;
  }

  // --- Details panel -------------------------------------------------------------------------

  function clearDetails() {
    $("topology-details").replaceChildren(
      el("p", { class: "text-body-secondary mb-0", text: "Click a switch, host, enclosure, device or link." }),
    );
  }

  function showDetails(ele) {
    const d = ele.data();
    const kind = ele.isEdge() ? "link" : d.kind;
    const rows = [];
    const add = (label, value) => rows.push(el("dt", { text: label }), el("dd", {}, value));
    add("Kind", el("span", {}, el("i", { class: `bi ${KIND_ICONS[kind] || "bi-circle"}` }), " ", title(kind)));
    if (ele.isEdge()) {
      const a = state.cy.getElementById(d.source);
      const b = state.cy.getElementById(d.target);
      add("Between", `${a.data("label") || d.source} ↔ ${b.data("label") || d.target}`);
    } else {
      add("Name", d.name || d.label);
    }
    add("Health", badge(d.health, HEALTH_COLOURS));
    if (d.state) add("State", badge(d.state, kind === "device" ? STATE_COLOURS : { active: "#20a35a", maintenance: "#6c757d", up: "#20a35a", degraded: HEALTH_COLOURS.warning, down: HEALTH_COLOURS.critical }));
    if (d.parent) {
      const parent = state.cy.getElementById(d.parent);
      add("In", parent.nonempty() ? parent.data("name") || parent.data("label") : d.parent);
    }
    if (d.latency_ns !== undefined) {
      add("Latency", d.latency_estimated
        ? `${fmtNs(d.latency_ns)} (estimated: the fabric manager reports none)`
        : fmtNs(d.latency_ns));
    }
    if (d.bandwidth_gbps !== undefined) add("Bandwidth", fmtGbps(d.bandwidth_gbps));
    const skip = new Set([...KNOWN_FIELDS, "name", "short", "latency_ns", "latency_estimated", "bandwidth_gbps", "latency_label"]);
    for (const key of Object.keys(d).sort()) {
      if (skip.has(key) || d[key] === null || d[key] === "" || typeof d[key] === "object") continue;
      add(title(key), String(d[key]));
    }
    const actions = el("div", { class: "d-flex flex-wrap gap-2 mt-2" });
    if (d.url) {
      actions.append(el("a", { class: "btn btn-sm btn-outline-primary", href: d.url, id: "details-open" }, el("i", { class: "bi bi-box-arrow-up-right" }), " Open page"));
    }
    if (kind === "host") {
      actions.append(
        el("button", { type: "button", class: "btn btn-sm btn-outline-info", id: "details-reach", onclick: () => showReachable(ele.id()) }, el("i", { class: "bi bi-broadcast" }), " Reachable devices"),
        el("button", { type: "button", class: "btn btn-sm btn-outline-secondary", id: "details-path-from", onclick: () => setPathHost(ele.id()) }, el("i", { class: "bi bi-signpost-split" }), " Path from here"),
      );
    }
    if (kind === "device") {
      const host = state.pathHost && state.cy.getElementById(state.pathHost);
      actions.append(
        el(
          "button",
          {
            type: "button",
            class: "btn btn-sm btn-outline-primary",
            id: "details-path-to",
            disabled: !host || host.empty(),
            title: host && host.nonempty() ? "" : "Choose a host first (its “Path from here” button)",
            onclick: () => showPaths(state.pathHost, ele.id()),
          },
          el("i", { class: "bi bi-signpost-2" }),
          host && host.nonempty() ? ` Path from ${host.data("label")}` : " Path from a host",
        ),
      );
    }
    if (["switch", "enclosure", "rack", "link"].includes(kind)) {
      actions.append(
        el("button", { type: "button", class: "btn btn-sm btn-outline-danger", id: "details-domain", onclick: () => showDomainOf(ele) }, el("i", { class: "bi bi-exclamation-diamond" }), " Show its failure domain"),
      );
    }
    $("topology-details").replaceChildren(
      el("dl", { class: "kv topo-kv", id: "details-fields" }, rows),
      actions,
      el("div", { class: "topo-error mt-2", id: "details-error", hidden: true }),
    );
  }

  // --- Search ------------------------------------------------------------------------------

  function fillSearchList() {
    const list = $("topology-search-list");
    const labels = state.cy
      .nodes()
      .map((n) => n.data("name") || n.data("label"))
      .filter(Boolean)
      .sort();
    list.replaceChildren(...[...new Set(labels)].slice(0, 5000).map((label) => el("option", { value: label })));
  }

  function findNode(text) {
    const wanted = text.trim().toLowerCase();
    if (!wanted || !state.cy) return null;
    const name = (n) => String(n.data("name") || n.data("label") || "").toLowerCase();
    const exact = state.cy.nodes().filter((n) => name(n) === wanted || n.id().toLowerCase() === wanted);
    if (exact.nonempty()) return exact[0];
    const partial = state.cy.nodes().filter((n) => name(n).includes(wanted));
    return partial.nonempty() ? partial[0] : null;
  }

  function focusNode(nodeId) {
    const cy = state.cy;
    const node = typeof nodeId === "string" ? cy.getElementById(nodeId) : nodeId;
    if (!node || node.empty()) return false;
    cy.elements().unselect();
    cy.elements().removeClass("search-hit");
    node.select();
    node.addClass("search-hit");
    cy.animate({ center: { eles: node }, zoom: Math.max(cy.zoom(), 1.4) }, { duration: 250 });
    showDetails(node);
    return true;
  }

  function search(event) {
    if (event) event.preventDefault();
    const text = $("topology-search").value;
    const node = findNode(text);
    $("topology-search").classList.toggle("is-invalid", Boolean(text.trim()) && !node);
    if (node) focusNode(node);
  }

  // --- Highlights ----------------------------------------------------------------------------

  const HIGHLIGHTS = ["faded", "reach", "path-node", "path-best", "path-alt", "spof", "blast-failed", "blast-affected", "search-hit"];

  function clearHighlights() {
    if (!state.cy) return;
    state.cy.elements().removeClass(HIGHLIGHTS.join(" "));
  }

  function fadeAllBut(collection) {
    const cy = state.cy;
    // Keep compound ancestors visible so the highlighted nodes stay inside their racks.
    const keep = collection.union(collection.ancestors());
    cy.elements().difference(keep).addClass("faded");
  }

  function clearAll() {
    clearHighlights();
    $("topology-result").replaceChildren();
    state.selectedDomains.clear();
    if (state.domains) renderDomainList();
    syncAddress();
  }

  function resultCard(heading, ...body) {
    $("topology-result").replaceChildren(
      el(
        "div",
        { class: "card console-card topo-result" },
        el(
          "div",
          { class: "card-header" },
          heading,
          el("button", { type: "button", class: "btn-close ms-auto", "aria-label": "Clear", id: "result-clear", onclick: clearAll }),
        ),
        el("div", { class: "card-body" }, body),
      ),
    );
  }

  // --- Reachable devices ---------------------------------------------------------------------

  async function showReachable(hostId) {
    const maxLatency = $("topology-max-latency").value;
    let body;
    try {
      body = await getJson(withQuery(api.paths, { host: pkOf(hostId), max_latency_ns: maxLatency }));
    } catch (error) {
      showError("details-error", error);
      return;
    }
    clearHighlights();
    const cy = state.cy;
    const devices = [...(body.devices || [])].sort((a, b) => a.latency_ns - b.latency_ns);
    let lit = cy.getElementById(hostId);
    for (const device of devices) {
      const node = cy.getElementById(device.node);
      if (node.nonempty()) lit = lit.union(node);
    }
    lit.addClass("reach");
    fadeAllBut(lit);
    const rows = devices.map((d) =>
      el(
        "tr",
        { "data-node": d.node },
        el("td", {}, el("a", { href: "#", onclick: (e) => { e.preventDefault(); focusNode(d.node); } }, d.name)),
        el("td", { class: "num" }, d.hops),
        el("td", { class: "num" }, fmtNs(d.latency_ns)),
        el("td", { class: "num" }, fmtGbps(d.bottleneck_gbps)),
      ),
    );
    resultCard(
      el("span", {}, el("i", { class: "bi bi-broadcast" }), ` Reachable from ${body.host ? body.host.name : hostId}`),
      el("p", { class: "mb-2", id: "reach-summary" }, `${devices.length} device${devices.length === 1 ? "" : "s"}`, maxLatency ? ` within ${fmtNs(maxLatency)}` : ""),
      devices.length
        ? el(
            "div",
            { class: "topo-table-wrap" },
            el(
              "table",
              { class: "table table-sm table-console", id: "reach-table" },
              el("thead", {}, el("tr", {}, el("th", { text: "Device" }), el("th", { class: "num", text: "Hops" }), el("th", { class: "num", text: "Latency" }), el("th", { class: "num", text: "Bottleneck" }))),
              el("tbody", {}, rows),
            ),
          )
        : el("p", { class: "text-body-secondary mb-0", text: "Nothing reachable." }),
    );
  }

  // --- Paths ---------------------------------------------------------------------------------

  function fillPathSelects() {
    const hostSelect = $("path-host");
    const deviceSelect = $("path-device");
    const byLabel = (a, b) => String(a.data("label")).localeCompare(String(b.data("label")), undefined, { numeric: true });
    const hosts = state.cy.nodes("[kind = 'host']").sort(byLabel);
    const devices = state.cy.nodes("[kind = 'device']").sort(byLabel);
    const keepHost = hostSelect.value;
    const keepDevice = deviceSelect.value;
    hostSelect.replaceChildren(el("option", { value: "", text: "Host…" }), ...hosts.map((n) => el("option", { value: n.id(), text: n.data("label") })));
    deviceSelect.replaceChildren(
      el("option", { value: "", text: devices.length ? "Device…" : "Devices not drawn" }),
      ...devices.map((n) => el("option", { value: n.id(), text: n.data("label") })),
    );
    hostSelect.value = keepHost;
    deviceSelect.value = keepDevice;
  }

  function setPathHost(hostId) {
    state.pathHost = hostId;
    $("path-host").value = hostId;
    const node = state.cy.getElementById(hostId);
    if (node.selected()) showDetails(node);
  }

  async function showPaths(hostId, deviceId) {
    if (!hostId || !deviceId) {
      showError("path-error", new Error("Choose a host and a device."));
      return;
    }
    showError("path-error", null);
    $("path-host").value = hostId;
    $("path-device").value = deviceId;
    state.pathHost = hostId;
    let body;
    try {
      body = await getJson(withQuery(api.paths, { host: pkOf(hostId), device: pkOf(deviceId) }));
    } catch (error) {
      showError("path-error", error);
      return;
    }
    clearHighlights();
    const cy = state.cy;
    const ends = cy.getElementById(hostId).union(cy.getElementById(deviceId));
    let lit = ends;
    const paths = body.paths || [];
    paths.forEach((path, index) => {
      const cls = index === 0 ? "path-best" : "path-alt";
      for (const id of path.links || []) {
        const edge = cy.getElementById(String(id).includes(":") ? id : `link:${id}`);
        if (index === 0 || !edge.hasClass("path-best")) edge.addClass(cls);
        lit = lit.union(edge);
      }
      for (const id of path.nodes || []) {
        const node = cy.getElementById(id);
        if (index === 0) node.addClass("path-node");
        lit = lit.union(node);
      }
    });
    ends.addClass("path-node");
    const spof = body.single_points_of_failure || { links: [], switches: [] };
    // Each entry is a reference ({id, name, node}); a bare id is accepted too.
    const refId = (item, kind) => {
      if (item && typeof item === "object") return item.node || `${kind}:${item.id}`;
      return String(item).includes(":") ? String(item) : `${kind}:${item}`;
    };
    const spofIds = [
      ...(spof.links || []).map((item) => refId(item, "link")),
      ...(spof.switches || []).map((item) => refId(item, "switch")),
    ];
    for (const id of spofIds) cy.getElementById(id).addClass("spof");
    fadeAllBut(lit);
    const name = (id) => {
      const ele = cy.getElementById(id);
      if (ele.empty()) return id;
      if (ele.isEdge()) return `${cy.getElementById(ele.data("source")).data("label")} ↔ ${cy.getElementById(ele.data("target")).data("label")}`;
      return ele.data("label");
    };
    const hostName = body.host ? body.host.name : name(hostId);
    const deviceName = body.device ? body.device.name : name(deviceId);
    resultCard(
      el("span", {}, el("i", { class: "bi bi-signpost-split" }), ` ${hostName} → ${deviceName}`),
      body.reachable === false || !paths.length
        ? el("p", { class: "text-danger mb-0", id: "path-summary" }, `${deviceName} is not reachable from ${hostName}.`)
        : [
            el("p", { class: "mb-2", id: "path-summary" }, `${paths.length} path${paths.length === 1 ? "" : "s"}; the best is highlighted in dark blue.`),
            el(
              "div",
              { class: "topo-table-wrap" },
              el(
                "table",
                { class: "table table-sm table-console", id: "path-table" },
                el("thead", {}, el("tr", {}, el("th", { class: "num", text: "Hops" }), el("th", { class: "num", text: "Latency" }), el("th", { class: "num", text: "Bottleneck" }), el("th", { text: "Through" }))),
                el(
                  "tbody",
                  {},
                  paths.map((p, i) =>
                    el(
                      "tr",
                      { class: i === 0 ? "table-primary" : "" },
                      el("td", { class: "num" }, p.hops),
                      el("td", { class: "num" }, fmtNs(p.latency_ns)),
                      el("td", { class: "num" }, fmtGbps(p.bottleneck_gbps)),
                      el("td", { class: "small" }, (p.nodes || []).slice(1, -1).map(name).join(" → ") || "direct"),
                    ),
                  ),
                ),
              ),
            ),
            el("h3", { class: "topo-subhead" }, "Single points of failure"),
            spofIds.length
              ? el("ul", { class: "topo-list", id: "path-spof" }, spofIds.map((id) => el("li", {}, el("i", { class: `bi ${KIND_ICONS[kindOf(id)] || "bi-circle"}` }), " ", name(id))))
              : el("p", { class: "text-body-secondary mb-0", id: "path-spof" }, "None: every element has an alternative."),
          ],
    );
  }

  // --- Failure domains -----------------------------------------------------------------------

  async function loadDomains() {
    if (state.domains) return state.domains;
    const all = [];
    let url = withQuery(api.domains, { page_size: 500 });
    for (let page = 0; url && page < 40; page++) {
      const body = await getJson(url);
      all.push(...(body.results || []));
      url = body.next || null;
    }
    state.domains = all;
    return all;
  }

  async function renderDomainList() {
    const list = $("domain-list");
    let domains;
    try {
      domains = await loadDomains();
    } catch (error) {
      showError("domain-error", error);
      return;
    }
    showError("domain-error", null);
    const kind = $("domain-kind").value;
    const q = $("domain-q").value.trim().toLowerCase();
    const matches = domains.filter(
      (d) => (!kind || d.kind === kind) && (!q || String(d.name).toLowerCase().includes(q) || String(d.key).toLowerCase().includes(q)),
    );
    const shown = matches.slice(0, 200);
    list.replaceChildren(
      ...shown.map((d) =>
        el(
          "label",
          { class: "domain-option", "data-domain": d.id },
          el("input", {
            type: "checkbox",
            class: "form-check-input",
            value: d.id,
            id: `domain-${d.id}`,
            checked: state.selectedDomains.has(String(d.id)),
            onchange: (event) => {
              if (event.target.checked) state.selectedDomains.add(String(d.id));
              else state.selectedDomains.delete(String(d.id));
              updateDomainButtons();
            },
          }),
          el("span", { class: "domain-name" }, d.name),
          el("span", { class: "domain-meta" }, `${title(d.kind)} · ${d.headline || `${plural(d.device_count, "device")} and ${plural(d.host_count, "host")} lost`}`),
        ),
      ),
      matches.length > shown.length ? el("div", { class: "text-body-secondary small px-1" }, `${matches.length - shown.length} more: narrow the search.`) : null,
      matches.length ? null : el("div", { class: "text-body-secondary small px-1" }, "No failure domain matches."),
    );
    updateDomainButtons();
  }

  function updateDomainButtons() {
    const n = state.selectedDomains.size;
    $("domain-show").disabled = n === 0;
    $("domain-count").textContent = n ? `${n} chosen` : "";
    const page = $("domain-page");
    page.hidden = n === 0;
    page.href = `${whatIfPage}?ids=${[...state.selectedDomains].join(",")}`;
  }

  async function showDomainOf(ele) {
    let domains;
    try {
      domains = await loadDomains();
    } catch (error) {
      showError("details-error", error);
      return;
    }
    const id = ele.id();
    const kind = ele.isEdge() ? "link" : ele.data("kind");
    let domain = domains.find((d) => d.key === id);
    if (!domain) {
      // An enclosure's domain may be kind "memory_box"; match on the primary key.
      const pk = pkOf(id);
      const kinds = kind === "enclosure" ? ["enclosure", "memory_box"] : [kind];
      domain = domains.find((d) => kinds.includes(d.kind) && pkOf(d.key) === pk);
    }
    if (!domain) {
      showError("details-error", new Error("This element is not a failure domain (refresh domains after the next sync)."));
      return;
    }
    state.selectedDomains = new Set([String(domain.id)]);
    $("domain-kind").value = "";
    $("domain-q").value = "";
    await renderDomainList();
    await showBlastRadius();
  }

  async function showBlastRadius() {
    const ids = [...state.selectedDomains];
    if (!ids.length) return;
    const url = ids.length === 1 ? `${api.domains.replace(/\/$/, "")}/${ids[0]}/impact/` : withQuery(api.impactMany, { ids: ids.join(",") });
    let body;
    try {
      body = await getJson(url);
    } catch (error) {
      showError("domain-error", error);
      return;
    }
    showError("domain-error", null);
    syncAddress();
    clearHighlights();
    const cy = state.cy;
    // Lost (red): what fails with the domains, and the devices and hosts cut off. Degraded
    // (orange): everything else the failure touches (see the report's definition).
    const failed = new Set(body.lost_ids || body.failed || []);
    const affected = new Set();
    for (const id of body.node_ids || []) if (!failed.has(id)) affected.add(id);
    let lit = cy.collection();
    for (const id of failed) {
      const ele = cy.getElementById(id);
      if (ele.nonempty()) lit = lit.union(ele.addClass("blast-failed"));
    }
    for (const id of affected) {
      const ele = cy.getElementById(id);
      if (ele.nonempty()) lit = lit.union(ele.addClass("blast-affected"));
    }
    if (lit.nonempty()) {
      fadeAllBut(lit.union(lit.connectedEdges().filter((e) => lit.contains(e.source()) && lit.contains(e.target()))));
    }
    renderBlast(body);
    window.composerTopology.lastImpact = body;
    root.dispatchEvent(new CustomEvent("topology:blast", { detail: body }));
  }

  const refName = (item) => item.name || (item.between ? item.between.join(" ↔ ") : item.node || item.id);

  function renderBlast(body) {
    const counts = body.counts || {};
    const names = (body.domains || []).map((d) => d.name).join(", ");
    const group = (key, label, withReason) => {
      const items = body[key] || [];
      if (!items.length) return null;
      return el(
        "details",
        { class: "topo-group", open: items.length <= 12, id: `blast-${key}` },
        el("summary", {}, `${label} `, el("span", { class: "badge text-bg-light" }, items.length)),
        el(
          "ul",
          { class: "topo-list" },
          items.map((item) =>
            el(
              "li",
              {},
              item.node && state.cy.getElementById(item.node).nonempty()
                ? el("a", { href: "#", onclick: (e) => { e.preventDefault(); focusNode(item.node); } }, refName(item))
                : refName(item),
              withReason && item.reason ? el("span", { class: "text-body-secondary" }, ` — ${item.reason}`) : null,
            ),
          ),
        ),
      );
    };
    const simple = (key, label) => {
      const items = body[key] || [];
      if (!items.length) return null;
      return el(
        "details",
        { class: "topo-group", open: true, id: `blast-${key}` },
        el("summary", {}, `${label} `, el("span", { class: "badge text-bg-light" }, items.length)),
        el("ul", { class: "topo-list" }, items.map((item) => el("li", {}, item.url ? el("a", { href: item.url }, item.name || item.id) : item.name || item.label || item.id))),
      );
    };
    const total = (key) => (counts[key] !== undefined ? counts[key] : (body[key] || []).length);
    resultCard(
      el("span", {}, el("i", { class: "bi bi-exclamation-diamond text-danger" }), " If ", names || "these", (body.domains || []).length === 1 ? " fails" : " fail"),
      el("p", { class: "mb-1 fw-semibold", id: "blast-summary" }, capital(body.headline || "")),
      el(
        "p",
        { class: "mb-2 small", id: "blast-elements" },
        `${plural(total("switches"), "switch", "switches")} and ${plural(total("links"), "link")} fail; ` +
        `${plural(total("enclosures"), "enclosure")} hit (${counts.enclosures_failed || 0} fail).`,
      ),
      body.definition ? el("p", { class: "small text-body-secondary mb-2", id: "blast-definition" }, body.definition) : null,
      el(
        "div",
        { class: "topo-legend-inline mb-2" },
        el("span", {}, el("span", { class: "swatch", style: "background:#dc3545" }), "lost"),
        el("span", {}, el("span", { class: "swatch", style: "background:#fd7e14" }), "degraded"),
      ),
      group("devices", "Devices lost", true),
      group("hosts", "Hosts lost", true),
      group("devices_degraded", "Devices degraded", true),
      group("hosts_degraded", "Hosts degraded", true),
      group("switches", "Switches", false),
      group("enclosures", "Enclosures", false),
      group("links", "Links", false),
      simple("compositions", "Compositions hit"),
      simple("compositions_degraded", "Compositions degraded"),
      simple("tenants", "Tenants"),
      el("a", { class: "btn btn-sm btn-outline-secondary mt-2", href: `${whatIfPage}?ids=${(body.domains || []).map((d) => d.id).join(",")}`, id: "blast-page" }, el("i", { class: "bi bi-file-earmark-text" }), " Open as a page"),
    );
  }

  // --- Wiring ------------------------------------------------------------------------------

  function fit() {
    if (state.cy) layoutHelpers.fit(state.cy);
  }

  function zoomBy(factor) {
    const cy = state.cy;
    if (!cy) return;
    cy.zoom({ level: cy.zoom() * factor, renderedPosition: { x: canvas.clientWidth / 2, y: canvas.clientHeight / 2 } });
  }

  function wire() {
    $("topology-fit").addEventListener("click", fit);
    $("topology-zoom-in").addEventListener("click", () => zoomBy(1.3));
    $("topology-zoom-out").addEventListener("click", () => zoomBy(1 / 1.3));
    $("topology-clear").addEventListener("click", clearAll);
    $("topology-search-form").addEventListener("submit", search);
    $("topology-search").addEventListener("change", () => search());
    for (const id of ["topology-manager", "topology-rack", "topology-collapse"]) {
      $(id).addEventListener("change", () => {
        syncAddress();
        load();
      });
    }
    $("path-form").addEventListener("submit", (event) => {
      event.preventDefault();
      showPaths($("path-host").value, $("path-device").value);
    });
    $("path-reach").addEventListener("click", () => {
      const host = $("path-host").value;
      if (!host) {
        showError("path-error", new Error("Choose a host."));
        return;
      }
      showError("path-error", null);
      showReachable(host);
    });
    let timer = null;
    $("domain-q").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(renderDomainList, 150);
    });
    $("domain-kind").addEventListener("change", renderDomainList);
    $("domain-show").addEventListener("click", showBlastRadius);
    $("domain-panel").addEventListener("toggle", (event) => {
      if (event.target.open) renderDomainList();
    });
  }

  const initial = new URLSearchParams(window.location.search);
  for (const id of (initial.get("domains") || "").split(",")) {
    if (/^\d+$/.test(id.trim())) state.selectedDomains.add(id.trim());
  }

  window.composerTopology = {
    cy: null,
    ready: false,
    lastImpact: null,
    load,
    recolour,
    focusNode,
    showReachable,
    showPaths,
    showDomainOf: (nodeId) => showDomainOf(state.cy.getElementById(nodeId)),
    showBlastRadius: (ids) => {
      state.selectedDomains = new Set(ids.map(String));
      renderDomainList();
      return showBlastRadius();
    },
    clear: clearAll,
  };

  wire();
  clearDetails();
  if (state.selectedDomains.size) {
    $("domain-panel").open = true;
  }
  load();
})();
