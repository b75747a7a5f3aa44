// Package web is knit's dashboard, served by knit serve at "/": server-
// rendered html/template pages over the knit library's read models, live
// updates as server-sent events from runs' event streams (htmx and its SSE
// extension in the page), and environment graphs laid out on the server
// from the engine's levels (layout.go, cached by the graph's shape) and
// drawn by static/graph.js in one pass; a live refresh patches the drawn
// nodes. Third-party browser files are vendored in static/vendor with their
// versions and SHA-256 sums (scripts/web-assets.sh refreshes them) and
// embedded: building needs no npm.
//
// Access: a person pastes a token once; it is kept in an HttpOnly,
// SameSite=Strict cookie (Secure under TLS). Every form carries a CSRF
// token derived from the session, and cross-origin POSTs are refused. A
// script sends Authorization: Bearer TOKEN instead, checked as the API
// checks it; a bearer token reads pages only (a POST carrying one is
// refused). ?live=0 renders any page without its live stream or timers.
// Pages close their streams on pagehide and reopen them on pageshow, so
// pages in the back/forward cache hold no connection.
// Runs go through the server's queue (Runs), like API calls.
//
// A plan waiting for a person is shown, with its resources' old and new
// values (sensitive ones masked by the runner), wherever it matters: the
// environment page (its graph node leads to the form), the component page
// and the approvals page. Operators decide there with the plan's checksum;
// the library checks the caller against the environment it resolves.
// static/app.js keeps relative times ticking and live logs at their end.
package web
