// Live updates of the topology page (live events recolour nodes in place). Plain
// script, no framework; loaded after static/js/topology.js, whose `window.composerTopology`
// (recolour, cy, load, ready) it drives from static/js/live.js's `composer:event`.
//
// - `device.health`: every changed element drawn here (device, switch, enclosure, host, rack,
//   link) takes its new health, so its colour changes where it is; nothing is laid out again.
//   Changes that arrive while the graph is (re)loading are kept and applied once it is drawn,
//   in event order, so the newest health wins whatever the order of arrival.
// - `fabric.alert` opening: the alert's source flashes for a few seconds.
// - `composer:resync` (more was missed than the server replays): the graph is loaded again.
"use strict";

(function () {
  const root = document.getElementById("topology");
  const topology = window.composerTopology;
  if (!root || !topology) {
    return;
  }

  const FLASH_MS = 6000;
  const FLASH_CLASS = "live-alert";
  const newest = new Map(); // element id -> id of the newest event applied to it
  let waiting = []; // [event id, element id, health] heard while the graph was not drawn
  let styled = null; // the Cytoscape instance that has the flash style

  function nodeId(kind, id) {
    return `${kind}:${id}`;
  }

  function apply(eventId, elementId, health) {
    if ((newest.get(elementId) || 0) > eventId) {
      return; // a replay older than what this element already shows
    }
    newest.set(elementId, eventId);
    topology.recolour(elementId, health);
  }

  function onHealth(message) {
    const changes = (message.payload && message.payload.changes) || [];
    for (const change of changes) {
      if (!change || !change.target_type || !Number.isInteger(change.id) || !change.health) {
        continue;
      }
      const elementId = nodeId(change.target_type, change.id);
      if (topology.ready && topology.cy) {
        apply(message.id, elementId, change.health);
      } else {
        waiting.push([message.id, elementId, change.health]);
      }
    }
  }

  function flash(elementId) {
    const cy = topology.cy;
    if (!cy) {
      return;
    }
    if (styled !== cy) {
      cy.style()
        .selector(`.${FLASH_CLASS}`)
        .style({"overlay-color": "#dc3545", "overlay-opacity": 0.35, "overlay-padding": 8})
        .update();
      styled = cy;
    }
    const element = cy.getElementById(elementId);
    if (element.nonempty()) {
      element.flashClass(FLASH_CLASS, FLASH_MS);
    }
  }

  function onAlert(message) {
    const alert = message.payload && message.payload.alert;
    if (!alert || alert.state !== "open" || message.replay || !topology.ready) {
      return;
    }
    flash(nodeId(alert.source_type, alert.source_id));
  }

  document.addEventListener("composer:event", (event) => {
    const message = event.detail || {};
    if (message.event_type === "device.health") {
      onHealth(message);
    } else if (message.event_type === "fabric.alert") {
      onAlert(message);
    }
  });

  root.addEventListener("topology:ready", () => {
    const held = waiting.sort((a, b) => a[0] - b[0]);
    waiting = [];
    for (const [eventId, elementId, health] of held) {
      apply(eventId, elementId, health);
    }
  });

  document.addEventListener("composer:resync", () => topology.load());
})();
