// The composition request form: picking a template fills the custom fields with its spec
// and locks them; "Custom request" unlocks them. The server ignores the locked fields when
// a template is chosen (the template's spec is used as is). Self-heal is not locked: picking
// a template sets it to the template's default, and the tenant may change it on top. Plain
// script.
"use strict";

(() => {
  const specsElement = document.getElementById("template-specs");
  const templates = specsElement ? JSON.parse(specsElement.textContent) : {};
  const AMOUNTS = ["memory_gib", "storage_tb", "cores", "host_memory_gib", "max_latency_ns"];

  function setValue(form, name, value) {
    const field = form.elements.namedItem(name);
    if (!field) {
      return;
    }
    if (field.type === "checkbox") {
      field.checked = Boolean(value);
    } else {
      field.value = value === null || value === undefined || value === 0 ? "" : String(value);
    }
  }

  function fill(form, spec, {selfHeal}) {
    const rows = form.querySelectorAll("[data-item-row]").length;
    for (let i = 0; i < rows; i += 1) {
      const item = (spec.items || [])[i] || {};
      setValue(form, `item_${i}_kind`, item.kind || "");
      setValue(form, `item_${i}_model`, item.model || "");
      setValue(form, `item_${i}_count`, item.count || "");
      setValue(form, `item_${i}_min_memory_gib`, (item.minima || {}).memory_gib || "");
    }
    for (const name of AMOUNTS) {
      setValue(form, name, spec[name]);
    }
    setValue(form, "host", spec.host || "");
    setValue(form, "policy", spec.policy || "none");
    setValue(form, "same_switch", spec.same_switch);
    setValue(form, "critical", spec.critical);
    if (selfHeal) {
      setValue(form, "self_heal", spec.self_heal);
    }
  }

  function apply(form, fromChange) {
    const select = form.elements.namedItem("template");
    const fieldset = form.querySelector("#custom-fields");
    const note = form.querySelector("#custom-fields-note");
    const description = form.querySelector("#template-description");
    const healNote = form.querySelector("#self-heal-note");
    if (!select || !fieldset) {
      return;
    }
    const chosen = templates[select.value];
    fieldset.disabled = Boolean(chosen);
    fieldset.classList.toggle("opacity-75", Boolean(chosen));
    if (note) {
      note.textContent = chosen ? "from the template (pick Custom request to change them)" : "leave a row empty to skip it";
    }
    if (description) {
      description.textContent = chosen ? chosen.description || "" : "";
    }
    if (healNote) {
      healNote.textContent = chosen
        ? `The template's default is ${chosen.spec.self_heal ? "on" : "off"}; your choice here overrides it.`
        : "";
    }
    // A form drawn again with errors keeps the self-heal choice it was sent with.
    if (chosen) {
      fill(form, chosen.spec, {selfHeal: fromChange});
    } else if (fromChange) {
      fill(form, { items: [], policy: "none" }, {selfHeal: true});
    }
  }

  function setUp(root) {
    const form = root.id === "composition-form" ? root : root.querySelector && root.querySelector("#composition-form");
    if (!form || form.dataset.ready) {
      return;
    }
    form.dataset.ready = "1";
    apply(form, false);
    const select = form.elements.namedItem("template");
    if (select) {
      select.addEventListener("change", () => apply(form, true));
    }
  }

  // A preview that answered (a plan, or a rejection) means the fields passed every check a
  // request makes but the name's, which a preview does not need: the errors of an earlier
  // attempt are stale. The name's stay until the next Request.
  function clearStaleErrors() {
    const form = document.getElementById("composition-form");
    if (!form) {
      return;
    }
    for (const feedback of form.querySelectorAll(".invalid-feedback:not(#error-name)")) {
      feedback.remove();
    }
    for (const field of form.querySelectorAll(".is-invalid:not([name='name'])")) {
      field.classList.remove("is-invalid");
    }
    const banner = form.querySelector("#form-errors");
    if (banner && !form.querySelector("#error-name")) {
      banner.remove();
    }
  }

  document.addEventListener("DOMContentLoaded", () => setUp(document));
  // The form comes back as a partial when it has errors: set it up again (htmx:load is
  // fired on every element htmx adds).
  document.addEventListener("htmx:load", (event) => setUp(event.detail.elt));
  document.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target && event.detail.target.id === "composition-preview") {
      clearStaleErrors();
    }
  });
  // The quota panel shows the tenant the form's tenant field shows: when they differ, the
  // panel asks for itself again, reading the field as it is now (_quota_panel.html). Checked
  // when the field changes (listened for on the document: a preview or a form sent back with
  // errors draws the field anew) and whenever a swap settles, because a panel htmx has just
  // swapped in does not hear "refresh" until it settles: a change in that instant would
  // otherwise be lost.
  function syncQuotaPanel() {
    const panel = document.getElementById("quota-panel");
    const field = document.getElementById("id_tenant");
    if (panel && field && window.htmx && panel.getAttribute("data-tenant") !== field.value) {
      window.htmx.trigger(panel, "refresh");
    }
  }
  document.addEventListener("change", (event) => {
    if (event.target && event.target.id === "id_tenant") {
      syncQuotaPanel();
    }
  });
  document.addEventListener("htmx:afterSettle", syncQuotaPanel);

  // A new booking: its times are the tenant's wall-clock times, so the zone is the
  // browser's (the form marks the field only when nothing else named one).
  const zoneField = document.querySelector("[data-browser-zone]");
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zoneField && browserZone) {
    zoneField.value = browserZone;
  }
})();
