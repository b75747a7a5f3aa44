// Package notify delivers knit's events (a run failed, drift was found, an
// approval is needed, …) to HTTP receivers: generic webhooks, signed with
// HMAC-SHA256 the way GitHub signs its webhooks, and Slack-compatible
// incoming webhooks.
//
// A Dispatcher keeps one bounded queue per (sink, environment). Events of
// one environment reach a sink in the order they were notified; different
// sinks and environments proceed independently, so a receiver that is down
// delays nothing but its own queue, and never the caller: Notify only
// enqueues. Failed deliveries are retried with exponential backoff; one
// that is given up is logged and the queue moves on. Close is bounded: one
// short flush, each waiting event tried once more without backoff. With an
// Outbox (knit's store), events are kept until delivered, so what the
// flush could not deliver is sent after a restart, first and in order.
//
// The package imports nothing from the rest of knit.
package notify
