// Console behaviour shared by every page. Plain script, no framework.
"use strict";

// Filter forms marked data-drop-empty send (and push into the address bar) only the fields
// that are set: "?kind=gpu", not "?q=&kind=gpu&model=&pool=".
document.addEventListener("htmx:configRequest", (event) => {
  const elt = event.detail.elt;
  const form = elt && elt.closest ? elt.closest("form[data-drop-empty]") : null;
  const data = event.detail.formData;
  if (!form || !data || event.detail.verb !== "get") {
    return;
  }
  for (const key of Array.from(new Set(data.keys()))) {
    if (data.getAll(key).every((value) => value === "")) {
      data.delete(key);
    }
  }
});

// "/" anywhere but in a field goes to the search box (the page's own on the search page, else
// the navbar's); Escape leaves it. Where the navbar is a collapsed menu, "/" opens the search
// page instead of a box nobody can see.
document.addEventListener("keydown", (event) => {
  const target = event.target;
  const typing =
    target instanceof HTMLElement &&
    (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  if (event.key === "Escape" && target instanceof HTMLInputElement && target.type === "search") {
    target.blur();
    return;
  }
  if (event.key !== "/" || typing || event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  const box =
    document.querySelector("#search-page-form input[name=q]") ||
    document.getElementById("navbar-search");
  if (!box) {
    return;
  }
  event.preventDefault();
  if (box.offsetParent === null) {
    window.location.assign(box.form.action);
    return;
  }
  box.focus();
  box.select();
});

// Bulk actions (form[data-bulk-form], fabric/_bulk_toolbar.html): the header box ticks every
// row on the page; the buttons wake up once a row is ticked, and the toolbar counts them. The
// boxes belong to the form by nesting or by their form="…" attribute (the alert table's rows
// hold forms of their own, which a form may not contain).
function composerBulkBoxes(form, selector) {
  return Array.from(form.elements).filter((box) => box.matches(selector));
}
function composerBulkRefresh(form) {
  const rows = composerBulkBoxes(form, "input[data-bulk-row]");
  const ticked = rows.filter((box) => box.checked).length;
  for (const button of form.querySelectorAll("[data-bulk-action]")) {
    button.disabled = ticked === 0;
  }
  for (const all of composerBulkBoxes(form, "input[data-bulk-all]")) {
    all.checked = ticked > 0 && ticked === rows.length;
    all.indeterminate = ticked > 0 && ticked < rows.length;
  }
  const count = form.querySelector("[data-bulk-count]");
  if (count) {
    count.textContent = ticked
      ? `${ticked} ticked`
      : "Tick rows to act on several at once.";
  }
}
document.addEventListener("change", (event) => {
  const box = event.target;
  const form = box instanceof HTMLInputElement ? box.form : null;
  if (!form || !form.matches("[data-bulk-form]")) {
    return;
  }
  if (box.matches("[data-bulk-all]")) {
    for (const row of composerBulkBoxes(form, "input[data-bulk-row]")) {
      row.checked = box.checked;
    }
  }
  composerBulkRefresh(form);
});

// A live redraw of a list (a device's health changed) must not drop what the operator has
// ticked: the ticks are noted before htmx swaps and put back on the rows still there.
let composerTicks = null;
document.addEventListener("htmx:beforeSwap", () => {
  composerTicks = new Map();
  for (const form of document.querySelectorAll("form[data-bulk-form]")) {
    const values = composerBulkBoxes(form, "input[data-bulk-row]")
      .filter((box) => box.checked)
      .map((box) => box.value);
    if (values.length) {
      composerTicks.set(form.id, new Set(values));
    }
  }
});
document.addEventListener("htmx:afterSettle", () => {
  if (!composerTicks || !composerTicks.size) {
    return;
  }
  for (const [id, values] of composerTicks) {
    const form = document.getElementById(id);
    if (!form) {
      continue;
    }
    for (const box of composerBulkBoxes(form, "input[data-bulk-row]")) {
      box.checked = box.checked || values.has(box.value);
    }
    composerBulkRefresh(form);
  }
  composerTicks = null;
});

// A button with data-copy="#field" copies that field's value (a secret shown once) and says
// so; where the page may not write the clipboard (plain HTTP), the value is left selected
// and the button says how to copy it.
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  const field = button ? document.querySelector(button.getAttribute("data-copy")) : null;
  if (!field) {
    return;
  }
  field.select();
  if (!button.dataset.label) {
    button.dataset.label = button.innerHTML; // once: a second click must not keep "Copied"
  }
  const say = (words) => {
    window.clearTimeout(Number(button.dataset.timer));
    button.textContent = words;
    button.dataset.timer = String(window.setTimeout(() => { button.innerHTML = button.dataset.label; }, 2500));
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(() => say("Copied"), () => say("Press Ctrl+C to copy"));
  } else {
    say("Press Ctrl+C to copy");
  }
});

// A secret shown once ([data-shown-once]) is not shown again from the back/forward cache:
// it goes before the page is kept there, and should a browser keep it anyway, on return.
for (const name of ["pagehide", "pageshow"]) {
  window.addEventListener(name, (event) => {
    if (event.persisted) {
      for (const node of document.querySelectorAll("[data-shown-once]")) node.remove();
    }
  });
}
