// Package web is knit's dashboard, served by knit serve at "/": server-
// rendered html/template pages over the knit library's read models, live
// updates as server-sent events from runs' event streams (htmx and its SSE
// extension in the page), and environment graphs laid out in the page by
// dagre. Third-party browser files are vendored in static/vendor with their
// versions and SHA-256 sums (scripts/web-assets.sh refreshes them) and
// embedded: building needs no npm.
//
// Access: a person pastes a token once; it is kept in an HttpOnly,
// SameSite=Strict cookie (Secure under TLS). Every form carries a CSRF
// token derived from the session, and cross-origin POSTs are refused.
// Runs go through the server's queue (Runs), like API calls.
package web
