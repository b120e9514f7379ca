// graph.js draws an entity's neighbourhood with Cytoscape.js. The page
// holds <div id="graph" data-src="…graph.json…" data-depth="N">; the JSON
// is fetched from this origin with the session cookie. A tap on a node
// re-centres the graph on it; a double tap opens its page. When drawn, the
// container's data-rendered holds the number of nodes (tests read it).
(function () {
  "use strict";
  function draw(el) {
    fetch(el.dataset.src, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("graph: HTTP " + r.status); }
        return r.json();
      })
      .then(function (g) {
        var elements = [];
        g.nodes.forEach(function (n) {
          elements.push({ data: { id: n.id, label: n.label, type: n.type, depth: n.depth } });
        });
        g.edges.forEach(function (e) {
          elements.push({ data: { id: e.id, source: e.source, target: e.target, label: e.relation } });
        });
        var cy = cytoscape({
          container: el,
          elements: elements,
          layout: { name: "cose", animate: false },
          style: [
            { selector: "node", style: { label: "data(label)", "font-size": 10, "text-wrap": "ellipsis", "text-max-width": 140,
              "background-color": "#6b7fa3", width: 18, height: 18 } },
            { selector: "node[depth = 0]", style: { "background-color": "#c2410c", width: 26, height: 26 } },
            { selector: "edge", style: { label: "data(label)", "font-size": 8, width: 1.5, "curve-style": "bezier",
              "target-arrow-shape": "triangle", "line-color": "#9aa5b1", "target-arrow-color": "#9aa5b1" } }
          ]
        });
        var depth = el.dataset.depth || "1";
        cy.on("tap", "node", function (ev) {
          var id = ev.target.id();
          if (id !== g.seed) { window.location.assign("/entities/" + id + "/graph?depth=" + encodeURIComponent(depth)); }
        });
        cy.on("dbltap", "node", function (ev) { window.location.assign("/entities/" + ev.target.id()); });
        el.dataset.rendered = String(cy.nodes().length);
      })
      .catch(function (err) {
        el.dataset.error = String(err);
        el.textContent = "The graph could not be drawn: " + err;
      });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var el = document.getElementById("graph");
    if (el) { draw(el); }
  });
})();
