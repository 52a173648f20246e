// The utilisation page: draws each chart with uPlot from the series the page embeds
// (#utilisation-data: one time axis `x` in epoch seconds and columns of numbers aligned on
// it, null where a line breaks, as uPlot takes them), and submits the pool choice when it
// changes. Plain script; the summary tables say the same in text.
"use strict";

(() => {
  const form = document.getElementById("utilisation-choice");
  const pool = document.getElementById("utilisation-pool");
  if (form && pool) {
    pool.addEventListener("change", () => form.submit());
  }
  const source = document.getElementById("utilisation-data");
  if (!source || typeof uPlot === "undefined") {
    return;
  }
  const data = JSON.parse(source.textContent);
  const css = getComputedStyle(document.documentElement);
  const colour = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  const COLOURS = {
    allocated: colour("--bar-allocated", "#0d6efd"),
    free: colour("--bar-free", "#20a35a"),
    unavailable: colour("--bar-unavailable", "#dc3545"),
    stranded: "#fd7e14",
  };
  const TENANT_COLOURS = ["#0d6efd", "#6f42c1", "#20a35a", "#fd7e14", "#d63384", "#0dcaf0", "#6c757d", "#198754"];
  const bySeries = new Map(data.series.map((s) => [s.id, s]));
  const charts = [];

  function line(label, stroke, unit) {
    return { label, stroke, width: 2, value: (u, v) => (v == null ? "–" : `${+v.toFixed(2)} ${unit}`) };
  }

  function options(el, series, unit) {
    return {
      width: Math.max(el.clientWidth, 240),
      height: 220,
      scales: { x: { time: true } },
      series: [{}, ...series],
      axes: [{}, { label: unit, size: 60 }],
      legend: { live: true },
    };
  }

  function draw(el) {
    const kind = el.dataset.chart;
    let opts;
    let columns;
    if (kind === "tenants") {
      const t = data.tenants;
      opts = options(el, t.map((s, i) => line(s.name, TENANT_COLOURS[i % TENANT_COLOURS.length], "")), "compositions");
      columns = [data.x, ...t.map((s) => s.y)];
    } else {
      const s = bySeries.get(el.dataset.series);
      if (!s) return;
      if (kind === "utilisation") {
        opts = options(el, [line("Utilisation", COLOURS.allocated, "%")], "%");
        opts.scales.y = { range: [0, 100] };
        columns = [data.x, s.utilisation];
      } else {
        const lines = [
          line("Allocated", COLOURS.allocated, s.unit),
          line("Free", COLOURS.free, s.unit),
          line("Unavailable", COLOURS.unavailable, s.unit),
        ];
        columns = [data.x, s.allocated, s.free, s.unavailable];
        if (s.stranded) {
          lines.push(line("Stranded", COLOURS.stranded, s.unit));
          columns.push(s.stranded);
        }
        opts = options(el, lines, s.unit);
      }
    }
    charts.push([el, new uPlot(opts, columns, el)]);
  }

  document.querySelectorAll(".utilisation-chart").forEach(draw);
  document.body.dataset.chartsDrawn = String(charts.length);

  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      for (const [el, chart] of charts) {
        chart.setSize({ width: Math.max(el.clientWidth, 240), height: 220 });
      }
    }, 150);
  });
})();
