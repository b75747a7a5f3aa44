// knit dashboard: live streams that let go of the browser while a page is
// hidden, relative times that tick, logs that follow their output. The
// environment's graph is graph.js.
(function () {
  "use strict";
  var knit = window.knit = window.knit || {};
  // Live streams close while the page is hidden (kept in the back/forward
  // cache, a page holding its EventSource keeps one of the browser's six
  // connections per host: the seventh navigation stalled for a minute) and
  // open again when it is shown. htmx's SSE extension opens every stream
  // through htmx.createEventSource, so each is known here with the last
  // event it saw; a stream reopened resumes after it (?after=).
  var streams = [];
  function openStream(url) {
    var src = new EventSource(url, { withCredentials: true });
    var rec = { src: src, url: url, last: "", types: {} };
    var add = src.addEventListener;
    src.addEventListener = function (type, fn, o) {
      if (!rec.types[type]) {
        rec.types[type] = true;
        add.call(src, type, function (e) { if (e.lastEventId) rec.last = e.lastEventId; });
      }
      return add.call(src, type, fn, o);
    };
    streams = streams.filter(function (s) { return s.src.readyState !== EventSource.CLOSED; });
    streams.push(rec);
    return src;
  }
  function hookStreams() { if (window.htmx) htmx.createEventSource = openStream; }
  hookStreams();
  addEventListener("pagehide", function () {
    streams.forEach(function (s) {
      if (s.src.readyState !== EventSource.CLOSED) { s.src.close(); s.hidden = true; }
    });
  });
  addEventListener("pageshow", function (e) {
    if (!e.persisted) return;
    var closed = {};
    streams.forEach(function (s) { if (s.hidden) closed[s.url] = s; });
    streams = [];
    document.querySelectorAll("[sse-connect]").forEach(function (elt) {
      var s = closed[elt.getAttribute("sse-connect")];
      if (!s) return;
      var base = elt.dataset.stream || s.url;
      elt.dataset.stream = base;
      // A changed attribute makes htmx set the element up again: the
      // extension opens a fresh stream.
      elt.setAttribute("sse-connect", s.last ? base + (base.indexOf("?") < 0 ? "?" : "&") + "after=" + encodeURIComponent(s.last) : base);
      elt.dataset.shown = String(Number(elt.dataset.shown || 0) + 1);
      htmx.process(elt);
    });
  });

  // Relative times ("3m ago") tick: every <time datetime> is re-worded
  // from the clock each second, in the words the server uses. knit.now is
  // the clock; tests replace it rather than wait.
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
  // A page without live updates (?live=0) keeps the server's words: no
  // timer runs, so a headless browser's page settles.
  if (document.body.dataset.live !== "0") setInterval(function () { knit.tick(); }, 1000);

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
