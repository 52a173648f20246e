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

// A button with data-copy="#field" copies that field's value (a secret shown once).
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  const field = button ? document.querySelector(button.getAttribute("data-copy")) : null;
  if (!field) {
    return;
  }
  field.select();
  if (navigator.clipboard) {
    navigator.clipboard.writeText(field.value).catch(() => {});
  }
});
