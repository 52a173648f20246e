// The failure-domain list: the ticked domains go to what-if (or the topology page) as one
// comma-separated parameter, "?ids=1,2", rather than "?ids=1&ids=2". Plain script.
"use strict";

(() => {
  const form = document.getElementById("what-if-form");
  if (!form) {
    return;
  }
  const checks = () => Array.from(form.querySelectorAll("input.domain-check"));
  const chosen = () => checks().filter((c) => c.checked).map((c) => c.value);
  const count = document.getElementById("what-if-count");
  const buttons = [document.getElementById("what-if-button"), document.getElementById("what-if-topology")];

  function update() {
    const n = chosen().length;
    count.textContent = n ? `${n} chosen` : "";
    for (const button of buttons) {
      if (button) button.disabled = n === 0;
    }
  }

  form.addEventListener("change", (event) => {
    if (event.target.id === "domain-all") {
      for (const check of checks()) check.checked = event.target.checked;
    }
    update();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    window.location.assign(`${form.action}?ids=${chosen().join(",")}`);
  });
  document.getElementById("what-if-topology").addEventListener("click", () => {
    window.location.assign(`${form.dataset.topologyUrl}?domains=${chosen().join(",")}`);
  });
  update();
})();
