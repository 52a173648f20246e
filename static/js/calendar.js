/* The calendar page's timeline: draws the booked windows the page embedded (json_script
   "calendar-data") with vis-timeline, in UTC; choosing one opens its booking's page.

   vis-timeline keeps its drawing hidden until its first range change has settled (about a
   second after load): the items are in the page before they can be seen. `data-ready`
   on #calendar-timeline turns "true" only once they can, for tests and tools. */
(function () {
  "use strict";

  function draw() {
    var holder = document.getElementById("calendar-timeline");
    var source = document.getElementById("calendar-data");
    if (!holder || !source || typeof vis === "undefined") return;
    var data = JSON.parse(source.textContent);
    var items = new vis.DataSet(data.items);
    var timeline = new vis.Timeline(holder, items, new vis.DataSet(data.groups), {
      start: data.start,
      end: data.end,
      min: data.start,
      max: data.end,
      stack: true,
      selectable: true,
      zoomMin: 60 * 60 * 1000,
      orientation: { axis: "top" },
      margin: { item: 4 },
      tooltip: { followMouse: true },
      // The tables beside it are in UTC: so is the axis.
      moment: function (date) { return vis.moment(date).utc(); },
      onInitialDrawComplete: function () { holder.dataset.ready = "true"; },
    });
    function open(id) {
      var item = items.get(id);
      if (item && item.url) window.location.assign(item.url);
    }
    timeline.on("select", function (props) {
      if (props.items && props.items.length) open(props.items[0]);
    });
    holder.addEventListener("keydown", function (event) {
      if (event.key !== "Enter") return;
      var chosen = timeline.getSelection();
      if (chosen.length) open(chosen[0]);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
