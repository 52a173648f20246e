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
