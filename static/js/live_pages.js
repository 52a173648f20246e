// What the live partials need besides static/js/live.js: a polling fallback for
// while the websocket is down, device rows that reload when one of their devices changes
// health, and a full reload of every live partial after a resync. Plain script, no framework.
// Loaded by templates/base.html for signed-in users, after live.js.
//
// ---- The contract for templates ----------------------------------------------------------------
//
//   hx-trigger="refresh, every 2s [composerPollFallback()]"
//       composerPollFallback() is true while live updates are not "live" (connecting,
//       reconnecting, offline), so a partial polls only when no event would tell it to reload.
//
//   data-live-devices="12 13 14"
//       the element gets the htmx event "refresh" (once per burst) when a `device.health`
//       event names one of these device ids: a table reloads only when a row it shows changed.
//
// After "composer:resync" (more was missed than the server replays) every element that
// declares interest (data-live-composition, data-live-job, data-live-type, data-live-devices)
// is refreshed once.
//
// A partial never stays older than an event about it. live.js refreshes the elements an event
// concerns up to 100 ms after it arrives, skipping those no longer in the page, and a refresh
// that finds one in flight is dropped (hx-sync="this:drop"). Either way the answer being
// drawn may have been read from the database before the event. So this script notes when an
// event concerning each live element (by id) arrived and when each htmx request started;
// when a response is drawn, every live element in it whose newest event came after the
// request started is refreshed again (at most one extra reload, never a lost one).
"use strict";

(function () {
  const BURST_MS = 100;
  const LIVE_SELECTOR =
    "[data-live-composition], [data-live-job], [data-live-type], [data-live-devices]";

  window.composerPollFallback = function composerPollFallback() {
    const live = window.ComposerLive;
    return !(live && live.status === "live");
  };

  const pending = new Set();
  let timer = null;

  function refreshSoon(element) {
    pending.add(element);
    if (!timer) {
      timer = setTimeout(flush, BURST_MS);
    }
  }

  function flush() {
    timer = null;
    const batch = Array.from(pending);
    pending.clear();
    for (const element of batch) {
      if (!element.isConnected) {
        continue;
      }
      if (window.htmx) {
        window.htmx.trigger(element, "refresh", {});
      } else {
        element.dispatchEvent(new CustomEvent("refresh", {detail: {}}));
      }
    }
  }

  function changedDevices(message) {
    const ids = new Set();
    const payload = message.payload || {};
    for (const change of Array.isArray(payload.changes) ? payload.changes : []) {
      if (change && change.target_type === "device" && Number.isInteger(change.id)) {
        ids.add(change.id);
      }
    }
    return ids;
  }

  document.addEventListener("composer:event", (event) => {
    const message = event.detail || {};
    if (message.event_type !== "device.health") {
      return;
    }
    const changed = changedDevices(message);
    if (!changed.size) {
      return;
    }
    document.querySelectorAll("[data-live-devices]").forEach((element) => {
      const shown = element.getAttribute("data-live-devices").split(/\s+/);
      if (shown.some((id) => id && changed.has(Number(id)))) {
        refreshSoon(element);
      }
    });
  });

  // ---- refreshes that would land on a swapped-out element --------------------------------------

  // The same rules as live.js's `interested()`, for the elements that have an id.
  function concerned(message) {
    const payload = message.payload || {};
    const compositions = new Set();
    for (const id of [message.composition_id, payload.composition_id]) {
      if (Number.isInteger(id)) {
        compositions.add(String(id));
      }
    }
    const radius = payload.blast_radius || {};
    for (const list of [payload.compositions, radius.compositions, radius.compositions_degraded]) {
      for (const item of Array.isArray(list) ? list : []) {
        if (item && Number.isInteger(item.id)) {
          compositions.add(String(item.id));
        }
      }
    }
    const devices = message.event_type === "device.health" ? changedDevices(message) : new Set();
    const found = [];
    document.querySelectorAll(LIVE_SELECTOR).forEach((element) => {
      if (!element.id) {
        return;
      }
      const types = (element.getAttribute("data-live-type") || "").split(/\s+/);
      const shown = (element.getAttribute("data-live-devices") || "").split(/\s+/);
      if (
        types.includes(message.event_type) ||
        compositions.has(element.getAttribute("data-live-composition")) ||
        (Number.isInteger(message.job_id) &&
          element.getAttribute("data-live-job") === String(message.job_id)) ||
        shown.some((id) => id && devices.has(Number(id)))
      ) {
        found.push(element);
      }
    });
    return found;
  }

  const heardAt = new Map(); // live element id -> when the newest event about it arrived

  document.addEventListener("composer:event", (event) => {
    const now = performance.now();
    for (const element of concerned(event.detail || {})) {
      heardAt.set(element.id, now);
    }
  });

  document.addEventListener("htmx:beforeRequest", (event) => {
    const xhr = event.detail && event.detail.xhr;
    if (xhr) {
      xhr.composerStartedAt = performance.now();
    }
  });

  document.addEventListener("htmx:afterSettle", (event) => {
    const xhr = event.detail && event.detail.xhr;
    const started = xhr && xhr.composerStartedAt;
    const root = event.target;
    if (started === undefined || !(root instanceof Element) || !root.isConnected) {
      return;
    }
    const drawn = Array.from(root.querySelectorAll(LIVE_SELECTOR));
    if (root.matches(LIVE_SELECTOR)) {
      drawn.push(root);
    }
    for (const element of drawn) {
      if (element.id && (heardAt.get(element.id) || 0) > started) {
        refreshSoon(element);
      }
    }
  });

  document.addEventListener("composer:resync", () => {
    document.querySelectorAll(LIVE_SELECTOR).forEach(refreshSoon);
  });
})();
