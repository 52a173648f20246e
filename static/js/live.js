// Live events: one websocket per tab to /ws/events/, on every page (docs/events.md).
// Plain script, no framework. Loaded by templates/base.html for signed-in users.
//
// ---- The contract for page scripts ----------------------------------------------------------
//
// 1. Every event, once per tab, as a DOM event on `document`:
//
//      document.addEventListener("composer:event", (e) => {
//        const m = e.detail;
//        // m = {type: "event", id, event_type, at, composition_id, job_id, payload, replay?}
//        // event_type: "composition.state" | "job.progress" | "fabric.alert" | "booking.occurrence"
//        //             | "alert.acknowledged" | "device.health"
//      });
//
//    De-duplicated by id, across reconnects and page loads in the same tab. After a
//    reconnect the missed events come with `replay: true`, and may arrive after newer live
//    ones: a page that keeps state per object keeps the event with the highest id. An event
//    the previous page heard after this one was asked for is delivered again: this page may
//    have been drawn before it (a composition shown "placing" while its job already binds).
//
// 2. Elements that declare interest get the htmx event "refresh" (so a partial with
//    hx-trigger="refresh" reloads itself), at most once per burst, with the message as
//    detail (a user's scope already brings every event about what it may see; no
//    subscription is needed for this):
//      data-live-composition="<id>"  events about that composition (its state, its jobs'
//                                    progress, alerts whose blast radius names it, hit
//                                    or degraded)
//      data-live-job="<id>"          that job's progress
//      data-live-type="fabric.alert device.health"   any event of these types
//
// 3. `document` also gets "composer:live-status" (detail: {status}) when the connection
//    changes: "connecting", "live", "reconnecting", "offline" (signed out: no retry);
//    and "composer:resync" (detail: the message) when more was missed than the server
//    replays: reload what the page shows.
//
// 4. window.ComposerLive:
//      subscribe({job: id} | {composition: id})   ask for that stream (checked on the server;
//                                                 re-sent after every reconnect)
//      unsubscribe({job: id} | {composition: id})
//      status            the current status
//      lastEventId       the newest event id this tab has
//
// ---- How it stays lossless --------------------------------------------------------------------
// The page is rendered with the newest event id it reflects (<body data-live-cursor>). The
// first connection resumes from there, later ones from the newest id seen; each resume also
// names the ids seen recently, since events can commit out of id order. The server replays
// what came after from the database, and also catches up at every heartbeat. No frame for
// three heartbeats: the socket is taken as dead and reopened.
"use strict";

(function () {
  const STORE_LAST = "composer.live.lastEventId";
  const STORE_SEEN = "composer.live.seen";
  const SEEN_KEEP_MS = 120000; // ids seen this recently go with a resume
  const SEEN_MAX = 500;
  const BACKOFF_MIN_MS = 500;
  const BACKOFF_MAX_MS = 30000;
  const CLOSE_UNAUTHENTICATED = 4401;

  const body = document.body;
  const cursorAttr = body ? body.getAttribute("data-live-cursor") : null;
  const pageCursor = cursorAttr !== null && cursorAttr !== "" ? Number(cursorAttr) : null;

  let socket = null;
  let status = "connecting";
  let attempts = 0;
  let reconnectTimer = null;
  let watchdog = null;
  let heartbeatMs = 20000;
  let firstOpen = true;
  const subscriptions = new Map(); // "job:7" -> {job: 7}
  const seen = loadSeen(); // id -> time seen (ms)
  let lastEventId = Math.max(readNumber(STORE_LAST), pageCursor || 0, ...seen.keys(), 0);

  function readNumber(key) {
    try {
      const value = Number(window.sessionStorage.getItem(key));
      return Number.isFinite(value) ? value : 0;
    } catch (err) {
      return 0; // storage disabled: this page only
    }
  }

  function loadSeen() {
    const map = new Map();
    // When this page was asked for (epoch ms). What the previous page heard after that may
    // be missing from what the server drew, so it is not "seen" here: the first resume
    // replays it (the server looks back COMPOSER_EVENTS_SETTLE_S for such events).
    const requested = performance.timeOrigin || Date.now();
    try {
      const raw = JSON.parse(window.sessionStorage.getItem(STORE_SEEN) || "[]");
      const cutoff = Date.now() - SEEN_KEEP_MS;
      for (const [id, at] of raw) {
        if (Number.isInteger(id) && at > cutoff && at < requested) {
          map.set(id, at);
        }
      }
    } catch (err) {
      // nothing stored, or storage disabled
    }
    return map;
  }

  function remember(id) {
    const now = Date.now();
    seen.set(id, now);
    for (const [oldId, at] of seen) {
      if (seen.size <= SEEN_MAX && at > now - SEEN_KEEP_MS) {
        break; // insertion order: the rest are newer
      }
      seen.delete(oldId);
    }
    store(id);
  }

  function store(id) {
    if (id > lastEventId) {
      lastEventId = id;
    }
    try {
      window.sessionStorage.setItem(STORE_LAST, String(lastEventId));
      window.sessionStorage.setItem(STORE_SEEN, JSON.stringify(Array.from(seen.entries())));
    } catch (err) {
      // storage full or disabled: de-duplication still works for this page
    }
  }

  function setStatus(next) {
    if (next === status) {
      return;
    }
    status = next;
    api.status = next;
    drawIndicator();
    document.dispatchEvent(new CustomEvent("composer:live-status", {detail: {status: next}}));
  }

  const LOOKS = {
    connecting: ["text-bg-secondary", "connecting", "Live updates: connecting"],
    live: ["text-bg-success", "live", "Live updates: connected"],
    reconnecting: ["text-bg-warning", "reconnecting", "Live updates: connection lost, retrying"],
    offline: ["text-bg-danger", "offline", "Live updates: off (signed out?); reload the page"],
  };

  function drawIndicator() {
    const badge = document.getElementById("live-status");
    if (!badge) {
      return;
    }
    const [klass, label, title] = LOOKS[status];
    for (const [other] of Object.values(LOOKS)) {
      badge.classList.remove(other);
    }
    badge.classList.add(klass);
    badge.title = title;
    badge.dataset.status = status;
    const text = badge.querySelector(".live-status-label");
    if (text) {
      text.textContent = label;
    }
  }

  function url() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${window.location.host}/ws/events/`;
  }

  function connect() {
    clearTimeout(reconnectTimer);
    reconnectTimer = null;
    try {
      socket = new WebSocket(url());
    } catch (err) {
      scheduleReconnect();
      return;
    }
    socket.addEventListener("open", onOpen);
    socket.addEventListener("message", onMessage);
    socket.addEventListener("close", onClose);
  }

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(message));
    }
  }

  function onOpen() {
    attempts = 0;
    // The first connection of this page resumes from what the page shows; later ones from
    // the newest event seen.
    const since = firstOpen && pageCursor !== null ? pageCursor : lastEventId;
    firstOpen = false;
    send({action: "resume", last_event_id: since, seen: Array.from(seen.keys()).slice(-SEEN_MAX)});
    for (const target of subscriptions.values()) {
      send({action: "subscribe", ...target});
    }
    armWatchdog();
  }

  function onMessage(frame) {
    armWatchdog();
    let message;
    try {
      message = JSON.parse(frame.data);
    } catch (err) {
      return;
    }
    switch (message.type) {
      case "hello":
        heartbeatMs = Math.max(1000, (message.heartbeat_s || 20) * 1000);
        setStatus("live");
        break;
      case "event":
        if (Number.isInteger(message.id) && !seen.has(message.id)) {
          remember(message.id);
          deliver(message);
        }
        break;
      case "resumed":
        if (Number.isInteger(message.newest_event_id) && message.newest_event_id < lastEventId) {
          // The server has fewer events than we remember (its database was restored):
          // count from its newest from now on.
          lastEventId = message.newest_event_id;
          store(lastEventId);
        }
        break;
      case "resync":
        if (Number.isInteger(message.newest_event_id)) {
          store(message.newest_event_id);
        }
        document.dispatchEvent(new CustomEvent("composer:resync", {detail: message}));
        break;
      case "error":
        if (window.console) {
          window.console.warn("live events:", message.field || "", message.message);
        }
        break;
      default:
        break; // subscribed, unsubscribed, heartbeat: nothing to do
    }
  }

  function onClose(event) {
    socket = null;
    clearTimeout(watchdog);
    if (event.code === CLOSE_UNAUTHENTICATED) {
      setStatus("offline"); // signed out: retrying would not help
      return;
    }
    scheduleReconnect();
  }

  function scheduleReconnect() {
    setStatus("reconnecting");
    // Exponential back-off with full jitter: a restarted server is not hit by every tab at once.
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** attempts);
    attempts += 1;
    reconnectTimer = setTimeout(connect, BACKOFF_MIN_MS / 2 + Math.random() * ceiling);
  }

  function armWatchdog() {
    // The server speaks at least every heartbeat; three silent ones: a half-open socket.
    clearTimeout(watchdog);
    watchdog = setTimeout(() => {
      if (socket) {
        socket.close();
      }
    }, heartbeatMs * 3);
  }

  // ---- delivery ------------------------------------------------------------------------------

  const pending = new Map(); // element -> latest message, refreshed once per burst
  let flushTimer = null;

  function deliver(message) {
    document.dispatchEvent(new CustomEvent("composer:event", {detail: message}));
    for (const element of interested(message)) {
      pending.set(element, message);
    }
    if (pending.size && !flushTimer) {
      flushTimer = setTimeout(flush, 100);
    }
  }

  function flush() {
    flushTimer = null;
    const batch = Array.from(pending.entries());
    pending.clear();
    for (const [element, message] of batch) {
      if (!element.isConnected) {
        continue;
      }
      if (window.htmx) {
        window.htmx.trigger(element, "refresh", message);
      } else {
        element.dispatchEvent(new CustomEvent("refresh", {detail: message}));
      }
    }
  }

  function compositionIds(message) {
    const ids = new Set();
    const payload = message.payload || {};
    for (const id of [message.composition_id, payload.composition_id]) {
      if (Number.isInteger(id)) {
        ids.add(id);
      }
    }
    const radius = payload.blast_radius || {};
    const lists = [payload.compositions, radius.compositions, radius.compositions_degraded];
    for (const list of lists) {
      for (const item of Array.isArray(list) ? list : []) {
        if (item && Number.isInteger(item.id)) {
          ids.add(item.id);
        }
      }
    }
    return ids;
  }

  function interested(message) {
    const found = new Set();
    const select = (selector) => document.querySelectorAll(selector).forEach((el) => found.add(el));
    for (const id of compositionIds(message)) {
      select(`[data-live-composition="${id}"]`);
    }
    if (Number.isInteger(message.job_id)) {
      select(`[data-live-job="${message.job_id}"]`);
    }
    if (typeof message.event_type === "string" && /^[a-z.]+$/.test(message.event_type)) {
      select(`[data-live-type~="${message.event_type}"]`);
    }
    return found;
  }

  // ---- the public face -----------------------------------------------------------------------

  function target(what) {
    const kind = what && ("job" in what ? "job" : "composition" in what ? "composition" : null);
    const id = kind ? Number(what[kind]) : NaN;
    if (!kind || !Number.isInteger(id) || id < 1) {
      throw new TypeError('ComposerLive: pass {job: <id>} or {composition: <id>}');
    }
    return [`${kind}:${id}`, {[kind]: id}];
  }

  const api = {
    status,
    get lastEventId() {
      return lastEventId;
    },
    subscribe(what) {
      const [key, value] = target(what);
      subscriptions.set(key, value);
      send({action: "subscribe", ...value});
    },
    unsubscribe(what) {
      const [key, value] = target(what);
      subscriptions.delete(key);
      send({action: "unsubscribe", ...value});
    },
  };
  window.ComposerLive = api;

  drawIndicator();
  connect();
})();
