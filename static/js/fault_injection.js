// The fault-injection page: the target field suggests the elements of the kind chosen
// (devices, links, switches, enclosures or power feeds; one <datalist> each, drawn by the
// server) and shows one of them as its example. Plain script, no framework.
"use strict";

(function () {
  const kind = document.getElementById("id_target_type");
  const target = document.getElementById("id_target");
  if (!kind || !target) {
    return;
  }

  function follow() {
    const list = document.getElementById(`fault-targets-${kind.value}`);
    if (!list) {
      return;
    }
    target.setAttribute("list", list.id);
    const example = list.dataset.example;
    target.placeholder = example ? `e.g. ${example}` : "";
  }

  kind.addEventListener("change", follow);
  follow();
})();
