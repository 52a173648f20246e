// Booking toasts: what the clock of bookings does to a tenant's occurrence (composed at its
// start, warned before its end, decomposed at it, missed, failed, extended...) pops up in
// the corner of every page, in the words the server wrote for the tenant.
// Plain script, no framework. Loaded by templates/base.html for signed-in users, after
// live.js, whose `composer:event` it listens to (see the contract in live.js); it shares
// #toast-area with alerts.js.
//
// The warning that an occurrence is about to end and a failure stay until closed; the rest
// fade. Replays of what the page already showed when it was drawn are skipped; live.js
// de-duplicates by event id. Text goes in with textContent, never as HTML.
//
// For tests and tools: `.toast[data-booking-occurrence][data-booking-what]`.
"use strict";

(function () {
  const area = document.getElementById("toast-area");
  if (!area) {
    return;
  }
  const cursorAttr = document.body.getAttribute("data-live-cursor");
  const pageCursor = cursorAttr ? Number(cursorAttr) : 0;
  const compositionUrlPattern = area.dataset.compositionUrl || "/compositions/0/";
  const STAY = new Set(["warning", "failed"]);
  const LOOK = {
    warning: ["text-bg-warning", "bi-hourglass-split", "Ending soon"],
    failed: ["text-bg-danger", "bi-x-octagon-fill", "Booking failed"],
    missed: ["text-bg-secondary", "bi-calendar-x", "Booking missed"],
    started: ["text-bg-info", "bi-play-circle-fill", "Booking started"],
    done: ["text-bg-secondary", "bi-stop-circle-fill", "Booking ended"],
  };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    node.className = className;
    if (text !== undefined) {
      node.textContent = String(text);
    }
    return node;
  }

  function toast(payload) {
    const what = String(payload.what || "");
    const [klass, icon, title] = LOOK[what] || ["text-bg-secondary", "bi-calendar-event", "Booking"];
    const box = el("div", "toast booking-toast");
    box.setAttribute("role", what === "failed" ? "alert" : "status");
    box.setAttribute("aria-live", what === "failed" ? "assertive" : "polite");
    box.setAttribute("aria-atomic", "true");
    box.dataset.bookingOccurrence = String(payload.occurrence_id);
    box.dataset.bookingWhat = what;
    const head = el("div", "toast-header");
    const badge = el("span", `badge ${klass} me-2`);
    const glyph = el("i", `bi ${icon}`);
    glyph.setAttribute("aria-hidden", "true");
    badge.append(glyph);
    head.append(badge, el("strong", "me-auto", `${title}: ${payload.booking_name || ""}`));
    const close = el("button", "btn-close");
    close.type = "button";
    close.setAttribute("data-bs-dismiss", "toast");
    close.setAttribute("aria-label", "Close");
    head.append(close);
    const body = el("div", "toast-body", payload.message || "");
    if (payload.composition_id) {
      const link = el("a", "d-block mt-1", "Open its composition");
      link.href = compositionUrlPattern.replace(/\/0\/$/, `/${payload.composition_id}/`);
      body.append(link);
    }
    box.append(head, body);
    area.prepend(box);
    box.addEventListener("hidden.bs.toast", () => box.remove());
    const autohide = !STAY.has(what);
    if (window.bootstrap && window.bootstrap.Toast) {
      window.bootstrap.Toast.getOrCreateInstance(box, {autohide, delay: 10000}).show();
    } else {
      box.classList.add("show");
      if (autohide) {
        setTimeout(() => box.remove(), 10000);
      }
    }
  }

  document.addEventListener("composer:event", (e) => {
    const m = e.detail || {};
    if (m.event_type !== "booking.occurrence" || !m.payload) {
      return;
    }
    if (m.replay && Number(m.id) <= pageCursor) {
      return; // the page was drawn after it
    }
    toast(m.payload);
  });
})();
