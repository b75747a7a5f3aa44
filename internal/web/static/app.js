// knit dashboard: draws an environment's dependency graph as SVG, laid out
// by dagre (vendored), from the JSON the server renders into the page, and
// redraws it whenever htmx swaps in fresh data (live updates).
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 200, H = 64, HWHY = 84, HHEALTH = 18;

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

  function draw() {
    var box = document.getElementById("graph");
    var src = document.getElementById("graph-data");
    if (!box || !src || !window.dagre) return;
    var t0 = performance.now();
    var nodes = JSON.parse(src.textContent);
    var g = new dagre.graphlib.Graph();
    // Left to right where there is room, top to bottom on a phone.
    g.setGraph({ rankdir: box.clientWidth < 600 ? "TB" : "LR", nodesep: 18, ranksep: box.clientWidth < 600 ? 32 : 48, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(function () { return {}; });
    nodes.forEach(function (n) {
      var h = n.why ? HWHY + 14 * (wrap(n.why, 30).length - 1) : H;
      if (n.health) h += HHEALTH;
      g.setNode(n.name, { width: W, height: n.decide ? h + 20 : h, n: n });
    });
    nodes.forEach(function (n) {
      n.dependsOn.forEach(function (d) { if (g.hasNode(d)) g.setEdge(d, n.name); });
    });
    dagre.layout(g);
    var gw = Math.ceil(g.graph().width), gh = Math.ceil(g.graph().height);
    var svg = el("svg", { width: gw, height: gh, viewBox: "0 0 " + gw + " " + gh, role: "group",
      "aria-label": box.dataset.label || "Dependency graph" });
    var defs = el("defs", {});
    var marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
    marker.appendChild(el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    g.edges().forEach(function (e) {
      var pts = g.edge(e).points;
      var d = "M" + pts.map(function (p) { return p.x + "," + p.y; }).join(" L");
      svg.appendChild(el("path", { d: d, class: "edge", "marker-end": "url(#arrow)" }));
    });
    g.nodes().forEach(function (name) {
      var v = g.node(name), n = v.n;
      var label = n.name + ", " + n.type + ": " + n.state + (n.plan ? ", plan " + n.plan : "") + (n.why ? ". " + n.why : "") +
        (n.health ? ". " + healthText(n.health) : "") + (n.act ? ": " + n.act : "");
      // A node that needs a person leads to its decide form, not elsewhere.
      var a = el("a", { href: n.decide || n.href, class: "node tone-" + n.tone, "data-name": n.name, "data-state": n.state });
      if (n.health) a.setAttribute("data-health", n.health.verdict);
      var grp = el("g", { transform: "translate(" + (v.x - v.width / 2) + "," + (v.y - v.height / 2) + ")" });
      grp.appendChild(el("title", {}, label));
      grp.appendChild(el("rect", { width: v.width, height: v.height, rx: 6, class: "box" }));
      grp.appendChild(el("rect", { width: 6, height: v.height, rx: 3, class: "bar" }));
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
        var lines = wrap(n.why, 30);
        lines.forEach(function (l, i) { grp.appendChild(el("text", { x: 14, y: below + i * 14, class: "whytext" }, l)); });
      }
      if (n.decide) grp.appendChild(el("text", { x: 14, y: v.height - 10, class: "cta" }, n.act));
      if (n.busy) {
        var sp = el("g", { transform: "translate(" + (v.width - 16) + ",16)" });
        sp.appendChild(el("circle", { r: 7, class: "spinner" }));
        grp.appendChild(sp);
      }
      a.appendChild(grp);
      svg.appendChild(a);
    });
    box.replaceChildren(svg);
    box.knitDrawn = { n: String(nodes.length), ms: String(Math.round(performance.now() - t0)) };
    marks(box);
    window.knitGraphDrawnAt = performance.now();
  }

  // marks puts the drawing's data attributes on the graph box: tests and
  // tools read them to know the graph is drawn.
  function marks(box) {
    box.dataset.drawn = box.knitDrawn.n;
    box.dataset.drawMs = box.knitDrawn.ms;
  }

  document.addEventListener("DOMContentLoaded", draw);
  // Fresh data is drawn in the same task that swaps it in, so the graph is
  // never seen empty; htmx then settles the new element, which resets its
  // attributes (not the drawing) a moment later, so the marks go back on.
  document.addEventListener("htmx:afterSwap", draw);
  document.addEventListener("htmx:afterSettle", function () {
    var box = document.getElementById("graph");
    if (box && box.knitDrawn && box.querySelector("svg")) marks(box); else draw();
  });

  // Relative times ("3m ago") tick: every <time datetime> is re-worded
  // from the clock each second, in the words the server uses. knit.now is
  // the clock; tests replace it rather than wait.
  var knit = window.knit = window.knit || {};
  knit.now = function () { return Date.now(); };
  function ago(ms) {
    var s = Math.floor(ms / 1000);
    if (s < 0) return "just now";
    if (s < 60) return s + "s ago";
    if (s < 3600) return Math.floor(s / 60) + "m ago";
    if (s < 48 * 3600) return Math.floor(s / 3600) + "h ago";
    return Math.floor(s / 86400) + "d ago";
  }
  knit.tick = function () {
    var now = knit.now();
    document.querySelectorAll("time[datetime]").forEach(function (t) {
      var at = Date.parse(t.getAttribute("datetime"));
      if (isNaN(at)) return;
      var words = ago(now - at);
      if (t.textContent !== words) t.textContent = words;
    });
  };
  // Countdowns (a soak's end) say how long is left the same way.
  function left(ms) {
    var s = Math.ceil(ms / 1000);
    if (s <= 0) return "now";
    if (s < 60) return "in " + s + "s";
    if (s < 3600) return "in " + Math.floor(s / 60) + "m";
    return "in " + Math.floor(s / 3600) + "h";
  }
  var tickTimes = knit.tick;
  knit.tick = function () {
    tickTimes();
    var now = knit.now();
    document.querySelectorAll("[data-until]").forEach(function (t) {
      var at = Date.parse(t.dataset.until);
      if (isNaN(at)) return;
      var words = left(at - now);
      if (t.textContent !== words) t.textContent = words;
    });
  };
  setInterval(function () { knit.tick(); }, 1000);

  // A log follows its output while the reader is at its end: scrolling up
  // stops that (data-follow="0"), scrolling back down to the end resumes it.
  function atEnd(log) { return log.scrollHeight - log.scrollTop - log.clientHeight < 24; }
  function follow(log) {
    if (log.dataset.follow) return;
    log.dataset.follow = "1";
    log.scrollTop = log.scrollHeight;
    log.addEventListener("scroll", function () { log.dataset.follow = atEnd(log) ? "1" : "0"; });
  }
  knit.follow = follow;
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("pre.log").forEach(follow);
    // Log lines arrive as htmx swaps into the page: keep followed logs at their end.
    new MutationObserver(function (muts) {
      muts.forEach(function (m) {
        var t = m.target.nodeType === 1 ? m.target : m.target.parentElement;
        var log = t && t.closest("pre.log");
        if (!log) {
          if (t) t.querySelectorAll("pre.log").forEach(follow);
          return;
        }
        follow(log);
        if (log.dataset.follow === "1") log.scrollTop = log.scrollHeight;
      });
    }).observe(document.body, { childList: true, subtree: true, characterData: true });
  });
})();
