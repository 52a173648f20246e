// Alert toasts: an alert that opens (or closes) while a page is open pops up in the corner of
// every page, with its severity, source, message and blast radius, linking to the alert list.
// Plain script, no framework. Loaded by templates/base.html for signed-in users,
// after live.js, whose `composer:event` it listens to (see the contract in live.js).
//
// What shows, and when:
//  - `fabric.alert` with state "open": one toast per alert and severity (an alert is re-sent
//    at every poll that changes it; a rise from warning to critical toasts again);
//    critical toasts stay until closed, others fade;
//  - `fabric.alert` with state "closed": a brief success toast, and the alert's open toast goes;
//  - `alert.acknowledged`: no toast; an open toast of that alert says who acknowledged it.
// The payload is already cut to what the viewer may see (a tenant gets its own compositions
// only, no element names and none of the fabric's counts), so the toast shows what it is
// given. Text goes in with textContent, never as HTML.
//
// Reconnects do not spam: what was toasted is remembered per tab (sessionStorage, like
// live.js's de-duplication), an event older than one already handled for the same alert is
// ignored (replays may arrive after newer live events), replays of what the page already
// showed when it was drawn are skipped, and a burst of more than a few replayed alerts
// becomes one summary toast.
//
// For tests and tools: #toast-area holds `.toast[data-alert-id][data-alert-state]`.
"use strict";

(function () {
  const area = document.getElementById("toast-area");
  if (!area) {
    return;
  }

  const STORE = "composer.alerts.toasts";
  const KEEP = 300; // alerts remembered per tab
  const MAX_SHOWN = 5;
  const REPLAY_WINDOW_MS = 400;
  const REPLAY_SHOWN_ONE_BY_ONE = 3;
  const DELAY_MS = {info: 8000, warning: 15000, closed: 6000, summary: 10000};

  const SOURCES = {
    device: "Device",
    link: "Link",
    switch: "Switch",
    host: "Host",
    enclosure: "Enclosure",
    power_feed: "Power feed",
    fabric_manager: "Fabric manager",
  };
  const SEVERITIES = {
    info: ["text-bg-info", "bi-info-circle-fill", "Info"],
    warning: ["text-bg-warning", "bi-exclamation-triangle-fill", "Warning"],
    critical: ["text-bg-danger", "bi-x-octagon-fill", "Critical"],
  };

  const isOperator = area.dataset.viewer === "operator";
  const alertsUrl = area.dataset.alertsUrl || "/alerts/";
  const compositionUrlPattern = area.dataset.compositionUrl || "/compositions/0/";
  const cursorAttr = document.body.getAttribute("data-live-cursor");
  const pageCursor = cursorAttr ? Number(cursorAttr) : 0;

  // alert id -> {event: newest event id handled, shown: ["open:critical", "closed", ...]}
  const memory = load();
  let replayBatch = [];
  let replayTimer = null;

  function load() {
    try {
      const raw = JSON.parse(window.sessionStorage.getItem(STORE) || "[]");
      return new Map(raw.filter((entry) => Array.isArray(entry) && entry.length === 2));
    } catch (err) {
      return new Map(); // nothing stored, or storage disabled
    }
  }

  function save() {
    while (memory.size > KEEP) {
      memory.delete(memory.keys().next().value);
    }
    try {
      window.sessionStorage.setItem(STORE, JSON.stringify(Array.from(memory.entries())));
    } catch (err) {
      // storage full or disabled: this page still de-duplicates
    }
  }

  // ---- small DOM helpers ---------------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = String(text);
    }
    return node;
  }

  function plural(count, one, many) {
    return `${count} ${count === 1 ? one : many || `${one}s`}`;
  }

  function compositionUrl(id) {
    return compositionUrlPattern.replace(/\/0\/$/, `/${id}/`);
  }

  function severityBadge(severity) {
    const [klass, icon, label] = SEVERITIES[severity] || ["text-bg-secondary", "bi-question-circle-fill", severity];
    const badge = el("span", `badge ${klass} me-2`);
    badge.append(el("i", `bi ${icon}`), ` ${label}`);
    badge.querySelector("i").setAttribute("aria-hidden", "true");
    return badge;
  }

  function compositionLinks(parent, refs) {
    refs.forEach((ref, index) => {
      if (index) {
        parent.append(", ");
      }
      const link = el("a", "toast-composition", ref.name || `#${ref.id}`);
      link.href = compositionUrl(ref.id);
      link.dataset.composition = String(ref.id);
      parent.append(link);
    });
  }

  // "3 devices and 1 host lost; 2 compositions: c1, g1 (2 tenants)" (operators: the headline
  // is the server's, in the words every page uses, fabric.topology.radius);
  // "Your compositions: c1" (tenants: the fabric's counts are not sent to them); then, for
  // both, the compositions it degrades (every device kept, some over fewer paths), as the
  // alert list says them.
  function radiusLine(radius) {
    const line = el("div", "toast-radius small mt-1");
    const compositions = Array.isArray(radius.compositions) ? radius.compositions : [];
    const degraded = Array.isArray(radius.compositions_degraded) ? radius.compositions_degraded : [];
    if (isOperator) {
      const devices = Number(radius.devices) || 0;
      const hosts = Number(radius.hosts) || 0;
      let text = radius.headline || `${plural(devices, "device")} and ${plural(hosts, "host")} lost`;
      if (radius.effect === "at_risk") {
        text = `at risk: ${text}`;
      } else if (radius.effect === "frozen") {
        text += ", bindings frozen";
      }
      text = text.charAt(0).toUpperCase() + text.slice(1);
      if (!compositions.length) {
        line.append(degraded.length ? text : `${text}; no composition hurt`);
      } else {
        line.append(`${text}; ${plural(compositions.length, "composition")}: `);
        compositionLinks(line, compositions);
        if (Array.isArray(radius.tenants) && radius.tenants.length) {
          line.append(` (${plural(radius.tenants.length, "tenant")})`);
        }
      }
    } else if (compositions.length) {
      const how = {at_risk: " at risk", frozen: " (bindings frozen)"}[radius.effect] || "";
      line.append(`Your compositions${how}: `);
      compositionLinks(line, compositions);
    }
    if (degraded.length) {
      const more = el("div", "toast-degraded");
      more.append(`${isOperator ? "Degraded" : "Your compositions degraded"} (fewer paths): `);
      compositionLinks(more, degraded);
      line.append(more);
    }
    return line;
  }

  // ---- toasts --------------------------------------------------------------------------------

  function show(toast, {autohide, delay}) {
    area.prepend(toast);
    const shown = area.querySelectorAll(".toast");
    for (let i = MAX_SHOWN; i < shown.length; i += 1) {
      dismiss(shown[i]);
    }
    toast.addEventListener("hidden.bs.toast", () => toast.remove());
    if (window.bootstrap && window.bootstrap.Toast) {
      window.bootstrap.Toast.getOrCreateInstance(toast, {autohide, delay}).show();
    } else {
      toast.classList.add("show");
      if (autohide) {
        setTimeout(() => toast.remove(), delay);
      }
    }
  }

  function dismiss(toast) {
    if (window.bootstrap && window.bootstrap.Toast) {
      window.bootstrap.Toast.getOrCreateInstance(toast).hide();
    } else {
      toast.remove();
    }
  }

  function frame(kind, alertId, state) {
    const toast = el("div", `toast alert-toast alert-toast-${kind}`);
    toast.setAttribute("role", kind === "critical" ? "alert" : "status");
    toast.setAttribute("aria-live", kind === "critical" ? "assertive" : "polite");
    toast.setAttribute("aria-atomic", "true");
    if (alertId !== null) {
      toast.dataset.alertId = String(alertId);
      toast.dataset.alertState = state;
    }
    return toast;
  }

  function header(toast, badge, title) {
    const head = el("div", "toast-header");
    if (badge) {
      head.append(badge);
    }
    head.append(el("strong", "me-auto toast-title", title));
    head.append(el("small", "text-body-secondary ms-2", "just now"));
    const close = el("button", "btn-close");
    close.type = "button";
    close.setAttribute("data-bs-dismiss", "toast");
    close.setAttribute("aria-label", "Close");
    head.append(close);
    toast.append(head);
  }

  function footerLink(body) {
    const link = el("a", "btn btn-sm btn-outline-secondary mt-2 toast-alerts-link", "View alerts");
    link.href = alertsUrl;
    body.append(link);
  }

  function sourceTitle(alert) {
    const kind = SOURCES[alert.source_type] || String(alert.source_type || "Fabric");
    // Tenants are sent no element names (the message comes in their words, as in the alert
    // list and the API); the title says what kind of element it is.
    return isOperator && alert.source_name ? `${kind} ${alert.source_name}` : `${kind} alert`;
  }

  function toastOpen(alert, radius) {
    const severity = SEVERITIES[alert.severity] ? alert.severity : "warning";
    const toast = frame(severity, alert.id, "open");
    toast.dataset.severity = severity;
    header(toast, severityBadge(severity), sourceTitle(alert));
    const body = el("div", "toast-body");
    body.append(el("div", "toast-message", alert.message));
    body.append(radiusLine(radius || {}));
    if (alert.acknowledged_by || alert.acknowledged_at) {
      body.append(acknowledgedLine(alert));
    }
    footerLink(body);
    toast.append(body);
    // Something is lost: stay until someone closes it; the rest fade.
    show(toast, {autohide: severity !== "critical", delay: DELAY_MS[severity] || DELAY_MS.warning});
  }

  function toastClosed(alert) {
    for (const open of area.querySelectorAll(`.toast[data-alert-id="${alert.id}"][data-alert-state="open"]`)) {
      dismiss(open);
    }
    const toast = frame("closed", alert.id, "closed");
    header(toast, null, `Recovered: ${sourceTitle(alert)}`);
    const icon = el("i", "bi bi-check-circle-fill text-success me-2");
    icon.setAttribute("aria-hidden", "true");
    toast.querySelector(".toast-header").prepend(icon);
    const body = el("div", "toast-body");
    body.append(el("div", "toast-message", `Closed: ${alert.message}`));
    footerLink(body);
    toast.append(body);
    show(toast, {autohide: true, delay: DELAY_MS.closed});
  }

  function toastSummary(count) {
    const toast = frame("summary", null, "");
    toast.classList.add("alert-toast-summary");
    header(toast, null, "While live updates were away");
    const body = el("div", "toast-body");
    body.append(el("div", "toast-message", `${plural(count, "alert change")}: opened or closed.`));
    footerLink(body);
    toast.append(body);
    show(toast, {autohide: true, delay: DELAY_MS.summary});
  }

  function acknowledgedLine(alert) {
    const who = isOperator && alert.acknowledged_by ? ` by ${alert.acknowledged_by}` : "";
    return el("div", "toast-acknowledged small text-success mt-1", `Acknowledged${who}`);
  }

  // ---- events --------------------------------------------------------------------------------

  function handle(message, alert, radius) {
    const what = alert.state === "closed" ? "closed" : `open:${alert.severity}`;
    const seen = memory.get(alert.id) || {event: 0, shown: []};
    if (message.id <= seen.event) {
      return; // a replay older than what this tab already handled for this alert
    }
    seen.event = message.id;
    const isNew = !seen.shown.includes(what);
    if (isNew) {
      seen.shown.push(what);
    }
    memory.delete(alert.id); // re-insert: the map keeps the most recently touched last
    memory.set(alert.id, seen);
    save();
    if (!isNew) {
      return;
    }
    const draw = () => (alert.state === "closed" ? toastClosed(alert) : toastOpen(alert, radius));
    if (message.replay) {
      replayBatch.push(draw);
      clearTimeout(replayTimer);
      replayTimer = setTimeout(flushReplays, REPLAY_WINDOW_MS);
    } else {
      draw();
    }
  }

  function flushReplays() {
    const batch = replayBatch;
    replayBatch = [];
    if (batch.length > REPLAY_SHOWN_ONE_BY_ONE) {
      toastSummary(batch.length);
    } else {
      batch.forEach((draw) => draw());
    }
  }

  function acknowledged(alert) {
    for (const toast of area.querySelectorAll(`.toast[data-alert-id="${alert.id}"][data-alert-state="open"]`)) {
      const body = toast.querySelector(".toast-body");
      if (body && !body.querySelector(".toast-acknowledged")) {
        body.insertBefore(acknowledgedLine(alert), body.querySelector(".toast-alerts-link"));
      }
    }
  }

  document.addEventListener("composer:event", (event) => {
    const message = event.detail || {};
    const payload = message.payload || {};
    const alert = payload.alert;
    if (!alert || !Number.isInteger(alert.id) || !Number.isInteger(message.id)) {
      return;
    }
    if (message.event_type === "alert.acknowledged") {
      acknowledged(alert);
      return;
    }
    if (message.event_type !== "fabric.alert") {
      return;
    }
    if (message.replay && message.id <= pageCursor) {
      return; // the page was drawn after it: its lists and counts already show it
    }
    handle(message, alert, payload.blast_radius);
  });

  window.ComposerAlerts = {
    // For tests and tools: forget which alerts this tab has toasted.
    forget() {
      memory.clear();
      save();
    },
  };
})();
