// The topology page's layout and labels: where nodes go and how their labels stay readable.
// Positions come with the JSON (fabric/topology/layout.py computes them from the structure:
// racks side by side, switches on top, then hosts, then enclosures with their devices), so
// the same fabric is drawn the same way on every load. Labels are sized so that they can be
// read at the zoom that fits the whole fabric; a device's label is short (its slot in the
// enclosure, the enclosure's name is on the box) and appears only once it can be read.
// static/js/topology.js uses `window.composerTopologyLayout`.
"use strict";

(() => {
  // As fabric/topology/layout.py's LABEL_SCALE: how much labels may grow to stay readable
  // at the zoom that fits; the layout leaves room for that.
  const LABEL_SCALE = 1.35;
  // Fit never zooms in further than this: a small fabric is not drawn with giant labels.
  const MAX_FIT_ZOOM = 1.3;
  const PADDING = 24;

  // Base label sizes (model units), per selector; scaled together by `fit()`.
  const FONTS = [
    ["node[kind = 'rack']", 16],
    ["node[kind = 'switch']", 13],
    ["node[kind = 'host']", 12],
    ["node[kind = 'enclosure']", 11],
  ];

  function labelStyle() {
    return [
      ...FONTS.map(([selector, size]) => ({ selector, style: { "font-size": size } })),
      { selector: "node[kind = 'switch'], node[kind = 'rack'], node[kind = 'enclosure']", style: { "font-weight": 600 } },
      // A light backing, so a label stays legible where links cross it.
      {
        selector: "node[kind != 'device']",
        style: { "text-background-color": "#ffffff", "text-background-opacity": 0.8, "text-background-padding": 1, "text-background-shape": "roundrectangle" },
      },
      // Names below this size on screen are not drawn: a zoomed-out fabric shows its racks,
      // switches, hosts and enclosures, and devices only as dots.
      { selector: "node", style: { "min-zoomed-font-size": 7 } },
      {
        selector: "node[kind = 'device']",
        // Cytoscape judges this at the zoom rounded up to a power of two: with 8 against 9, a
        // device's label shows once the fabric is zoomed in past 1.
        style: { label: "data(short)", "font-size": 8, "min-zoomed-font-size": 9, "text-max-width": 40, "text-margin-y": 1 },
      },
    ];
  }

  // A device's short label: its name without its enclosure's ("gpu-a-01-3" in gpu-a-01: "3"),
  // else its last part ("nvme-a-01-5": "5"); the full name is in the details panel.
  function shortLabels(graph) {
    const names = new Map();
    for (const node of graph.nodes || []) {
      names.set(node.data.id, node.data.label);
    }
    for (const node of graph.nodes || []) {
      const d = node.data;
      if (d.kind !== "device") continue;
      const parent = names.get(d.parent);
      const label = String(d.label || "");
      if (parent && label.startsWith(`${parent}-`)) d.short = label.slice(parent.length + 1);
      else d.short = /-(\w+)$/.test(label) ? label.match(/-(\w+)$/)[1] : label;
    }
  }

  function hasPositions(graph) {
    const nodes = graph.nodes || [];
    return nodes.length > 0 && nodes.some((node) => node.position);
  }

  // Fit the whole fabric, no closer than MAX_FIT_ZOOM, then size labels for that zoom.
  function fit(cy) {
    cy.fit(undefined, PADDING);
    if (cy.zoom() > MAX_FIT_ZOOM) {
      cy.zoom({ level: MAX_FIT_ZOOM, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
      cy.center();
    }
    const scale = Math.min(LABEL_SCALE, Math.max(1, 1 / cy.zoom()));
    const style = cy.style();
    for (const [selector, size] of FONTS) {
      style.selector(selector).style("font-size", Math.round(size * scale * 10) / 10);
    }
    style.update();
  }

  window.composerTopologyLayout = { labelStyle, shortLabels, hasPositions, fit, LABEL_SCALE };
})();
