// knit dashboard: draws an environment's dependency graph as SVG from the
// JSON the server renders into the page: the nodes and their layout (the
// engine's levels as columns, each column ordered so edges cross little),
// computed and cached on the server by the graph's shape. The page only
// stacks the boxes, in one pass, whatever the size. A live refresh of the
// same shape patches the drawn nodes in place (their states, words and
// places): nothing is drawn anew.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 200, H = 64, HWHY = 84, HHEALTH = 18, GAP = 18, MARGIN = 8;
  var knit = window.knit = window.knit || {};
  knit.graphDraws = 0; // whole drawings since the page loaded (tests read it)

  // healthText is a node's health for its hover title: the verdict, then
  // each check with its verdict and what it saw.
  function healthText(h) {
    return "health " + h.verdict + ": " + h.checks.map(function (c) {
      return c.name + " " + c.verdict + (c.evidence ? " (" + c.evidence + ")" : "") + (c.message ? " — " + c.message : "");
    }).join("; ");
  }

  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  // wrap breaks text into lines of at most n characters, at spaces, at most 3.
  function wrap(s, n) {
    var out = [], line = "";
    s.split(" ").forEach(function (w) {
      if (line && (line + " " + w).length > n) { out.push(line); line = w; } else { line = line ? line + " " + w : w; }
    });
    if (line) out.push(line);
    if (out.length > 3) { out = out.slice(0, 3); out[2] = clip(out[2] + " …", n); }
    return out.map(function (l) { return clip(l, n + 4); });
  }

  function height(n) {
    var h = n.why ? HWHY + 14 * (wrap(n.why, 30).length - 1) : H;
    if (n.health) h += HHEALTH;
    return n.decide ? h + 20 : h;
  }

  // place puts every node: the layout's columns left to right, each
  // stacked and centred (top to bottom on a phone: columns become rows).
  function place(data, byName, tb) {
    var at = {}, lens = [], most = 0, main = MARGIN, rank = tb ? 32 : 48;
    data.layout.columns.forEach(function (col) {
      var len = 0;
      col.forEach(function (name, i) { if (byName[name]) len += (i ? GAP : 0) + (tb ? W : height(byName[name])); });
      lens.push(len);
      most = Math.max(most, len);
    });
    data.layout.columns.forEach(function (col, c) {
      var cross = MARGIN + (most - lens[c]) / 2, thick = 0;
      col.forEach(function (name) {
        var n = byName[name];
        if (!n) return;
        var h = height(n);
        at[name] = tb ? { x: cross, y: main, w: W, h: h } : { x: main, y: cross, w: W, h: h };
        cross += (tb ? W : h) + GAP;
        thick = Math.max(thick, tb ? h : W);
      });
      main += thick + rank;
    });
    main += MARGIN - rank;
    return { at: at, w: Math.ceil(tb ? most + 2 * MARGIN : main), h: Math.ceil(tb ? main : most + 2 * MARGIN) };
  }

  // edgeD is an edge's curve from a dependency's box to its dependent's.
  function edgeD(a, b, tb) {
    var x1, y1, x2, y2;
    if (tb) {
      x1 = a.x + a.w / 2; y1 = a.y + a.h; x2 = b.x + b.w / 2; y2 = b.y;
      var m = (y2 - y1) / 2;
      return "M" + x1 + "," + y1 + " C" + x1 + "," + (y1 + m) + " " + x2 + "," + (y2 - m) + " " + x2 + "," + y2;
    }
    x1 = a.x + a.w; y1 = a.y + a.h / 2; x2 = b.x; y2 = b.y + b.h / 2;
    var d = (x2 - x1) / 2;
    return "M" + x1 + "," + y1 + " C" + (x1 + d) + "," + y1 + " " + (x2 - d) + "," + y2 + " " + x2 + "," + y2;
  }

  // fill (re)writes a node's link and box from its data, at its place.
  function fill(a, n, v) {
    var label = n.name + ", " + n.type + ": " + n.state + (n.plan ? ", plan " + n.plan : "") + (n.why ? ". " + n.why : "") +
      (n.health ? ". " + healthText(n.health) : "") + (n.act ? ": " + n.act : "");
    // A node that needs a person leads to its decide form, not elsewhere.
    a.setAttribute("href", n.decide || n.href);
    a.setAttribute("class", "node tone-" + n.tone);
    a.setAttribute("data-state", n.state);
    if (n.health) a.setAttribute("data-health", n.health.verdict); else a.removeAttribute("data-health");
    var grp = el("g", { transform: "translate(" + v.x + "," + v.y + ")" });
    grp.appendChild(el("title", {}, label));
    grp.appendChild(el("rect", { width: v.w, height: v.h, rx: 6, class: "box" }));
    grp.appendChild(el("rect", { width: 6, height: v.h, rx: 3, class: "bar" }));
    grp.appendChild(el("text", { x: 14, y: 20, class: "name" }, clip(n.name, 22)));
    grp.appendChild(el("text", { x: 14, y: 38, class: "meta" }, n.type + (n.plan ? " · " + n.plan : "")));
    grp.appendChild(el("text", { x: 14, y: 56, class: "state" }, clip(n.state, 26)));
    var below = 74;
    if (n.health) {
      // The health line: a dot and the verdict in its tone, the checks on hover.
      var hl = el("g", { class: "health tone-" + n.health.tone, transform: "translate(14," + (below - 4) + ")" });
      hl.appendChild(el("title", {}, healthText(n.health)));
      hl.appendChild(el("circle", { cx: 5, cy: -4, r: 5, class: "dot" }));
      hl.appendChild(el("text", { x: 14, y: 0, class: "healthtext" }, clip("health " + n.health.verdict, 24)));
      grp.appendChild(hl);
      below += HHEALTH;
    }
    if (n.why) {
      wrap(n.why, 30).forEach(function (l, i) { grp.appendChild(el("text", { x: 14, y: below + i * 14, class: "whytext" }, l)); });
    }
    if (n.decide) grp.appendChild(el("text", { x: 14, y: v.h - 10, class: "cta" }, n.act));
    if (n.busy) {
      var sp = el("g", { transform: "translate(" + (v.w - 16) + ",16)" });
      sp.appendChild(el("circle", { r: 7, class: "spinner" }));
      grp.appendChild(sp);
    }
    a.replaceChildren(grp);
    a.knitFilled = JSON.stringify(n) + JSON.stringify(v);
  }

  function read() {
    var box = document.getElementById("graph"), src = document.getElementById("graph-data");
    if (!box || !src) return null;
    var data = JSON.parse(src.textContent), byName = {};
    data.nodes.forEach(function (n) { byName[n.name] = n; });
    return { box: box, data: data, byName: byName, tb: box.clientWidth < 600 };
  }

  // draw draws the graph whole.
  function draw(g) {
    var p = place(g.data, g.byName, g.tb);
    var svg = el("svg", { width: p.w, height: p.h, viewBox: "0 0 " + p.w + " " + p.h, role: "group",
      "aria-label": g.box.dataset.label || "Dependency graph" });
    var defs = el("defs", {});
    var marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
    marker.appendChild(el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    var edges = [], nodes = {};
    g.data.nodes.forEach(function (n) {
      n.dependsOn.forEach(function (d) {
        if (!g.byName[d] || d === n.name) return;
        var e = el("path", { d: edgeD(p.at[d], p.at[n.name], g.tb), class: "edge", "marker-end": "url(#arrow)", "data-from": d, "data-to": n.name });
        edges.push(e);
        svg.appendChild(e);
      });
    });
    g.data.nodes.forEach(function (n) {
      var a = el("a", { "data-name": n.name });
      fill(a, n, p.at[n.name]);
      nodes[n.name] = a;
      svg.appendChild(a);
    });
    g.box.replaceChildren(svg);
    knit.graphDraws++;
    return { key: g.data.layout.key, tb: g.tb, svg: svg, nodes: nodes, edges: edges };
  }

  // patch brings a drawing of the same shape up to date: each node whose
  // data or place changed is refilled, edges follow their boxes.
  function patch(g, drawn) {
    var p = place(g.data, g.byName, g.tb);
    g.data.nodes.forEach(function (n) {
      var a = drawn.nodes[n.name], v = p.at[n.name];
      if (a.knitFilled !== JSON.stringify(n) + JSON.stringify(v)) fill(a, n, v);
    });
    drawn.edges.forEach(function (e) {
      e.setAttribute("d", edgeD(p.at[e.getAttribute("data-from")], p.at[e.getAttribute("data-to")], g.tb));
    });
    drawn.svg.setAttribute("width", p.w);
    drawn.svg.setAttribute("height", p.h);
    drawn.svg.setAttribute("viewBox", "0 0 " + p.w + " " + p.h);
    if (drawn.svg.parentNode !== g.box) g.box.replaceChildren(drawn.svg);
    return drawn;
  }

  // show draws or patches the graph from the page's data.
  var kept = null; // the drawing of a graph box a live refresh is replacing
  function show() {
    var g = read();
    if (!g) return;
    var t0 = performance.now();
    var drawn = g.box.knitGraph || kept;
    kept = null;
    var same = drawn && drawn.key === g.data.layout.key && drawn.tb === g.tb;
    g.box.knitGraph = same ? patch(g, drawn) : draw(g);
    g.box.knitDrawn = { n: String(g.data.nodes.length), ms: String(Math.round(performance.now() - t0)) };
    marks(g.box);
    find();
    window.knitGraphDrawnAt = performance.now();
  }

  // marks puts the drawing's data attributes on the graph box: tests and
  // tools read them to know the graph is drawn.
  function marks(box) {
    box.dataset.drawn = box.knitDrawn.n;
    box.dataset.drawMs = box.knitDrawn.ms;
  }

  // find dims the nodes whose names do not hold the search field's words
  // (big graphs have one) and brings the first that does into view.
  function find() {
    var q = document.getElementById("graph-find"), box = document.getElementById("graph");
    if (!q || !box || !box.knitGraph) return;
    var words = q.value.trim().toLowerCase(), first = null, hits = 0;
    Object.keys(box.knitGraph.nodes).forEach(function (name) {
      var a = box.knitGraph.nodes[name], hit = !words || name.toLowerCase().indexOf(words) >= 0;
      a.classList.toggle("dim", !hit);
      if (hit && words) { hits++; if (!first) first = a; }
    });
    var out = document.getElementById("graph-found");
    if (out) out.textContent = words ? hits + (hits === 1 ? " component matches" : " components match") : "";
    return first;
  }
  document.addEventListener("input", function (e) {
    if (e.target.id !== "graph-find") return;
    var first = find();
    if (first) first.scrollIntoView({ block: "center", inline: "center" });
  });

  document.addEventListener("DOMContentLoaded", show);
  // A live refresh swaps the graph's box for a new, empty one: its drawing
  // moves over, and is patched, in the same task, so the graph is never
  // seen empty. htmx then settles the new element, which resets its
  // attributes (not the drawing) a moment later, so the marks go back on.
  document.addEventListener("htmx:beforeSwap", function () {
    var box = document.getElementById("graph");
    kept = box && box.knitGraph ? box.knitGraph : null;
  });
  document.addEventListener("htmx:afterSwap", show);
  document.addEventListener("htmx:afterSettle", function () {
    var box = document.getElementById("graph");
    if (box && box.knitDrawn && box.querySelector("svg")) marks(box); else show();
  });
})();
