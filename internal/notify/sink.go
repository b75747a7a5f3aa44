package notify

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
)

// Sink kinds.
const (
	// SinkWebhook posts the event as JSON (see Dispatcher) signed with
	// Secret.
	SinkWebhook = "webhook"
	// SinkSlack posts a Slack-compatible {"text": …, "blocks": […]}
	// message, as Slack, Mattermost and Rocket.Chat incoming webhooks take.
	SinkSlack = "slack"
)

// SignatureHeader carries "sha256=<hex>", the HMAC-SHA256 of the exact
// request body keyed with the sink's Secret, as GitHub's
// X-Hub-Signature-256 does. Receivers should compare it in constant time.
const SignatureHeader = "X-Knit-Signature-256"

// EventHeader carries the event's kind, so receivers can route without
// parsing the body.
const EventHeader = "X-Knit-Event"

// Sink is one receiver of events.
//
// Name identifies the sink in logs and in the webhook body; names are
// unique within a Dispatcher. Kind is SinkWebhook or SinkSlack. URL is an
// http or https URL; treat it as a secret (a Slack webhook URL is one), it
// is never logged. Secret is the HMAC key: required for webhooks, and if
// set on a Slack sink its requests are signed too. Events lists the event
// kinds the sink receives; empty means all.
type Sink struct {
	Name   string
	Kind   string
	URL    string
	Secret string
	Events []string
}

// LogValue shows the sink without its secret or URL path and query, so that
// logging a Sink leaks neither.
func (s Sink) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", s.Name),
		slog.String("kind", s.Kind),
		slog.String("host", safeHost(s.URL)),
	)
}

// wants reports whether the sink receives events of kind k.
func (s Sink) wants(k Kind) bool {
	return len(s.Events) == 0 || slices.ContainsFunc(s.Events, func(e string) bool { return Canonical(e) == k })
}

// validateSinks reports every problem in sinks, each naming the sink.
func validateSinks(sinks []Sink) error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range sinks {
		where := fmt.Sprintf("sinks[%d]", i)
		if s.Name != "" {
			where += fmt.Sprintf(" %q", s.Name)
		}
		for _, msg := range s.problems() {
			errs = append(errs, fmt.Errorf("notify: %s: %s", where, msg))
		}
		if s.Name != "" && seen[s.Name] {
			errs = append(errs, fmt.Errorf("notify: %s: name is used by an earlier sink", where))
		}
		seen[s.Name] = true
	}
	return errors.Join(errs...)
}

// problems lists what is wrong with one sink, never quoting URL or Secret.
func (s Sink) problems() []string {
	var out []string
	if s.Name == "" {
		out = append(out, "name is empty")
	}
	switch s.Kind {
	case SinkWebhook:
		if s.Secret == "" {
			out = append(out, "a webhook sink needs a secret to sign its requests")
		}
	case SinkSlack:
	default:
		out = append(out, fmt.Sprintf("kind %q is not %q or %q", s.Kind, SinkWebhook, SinkSlack))
	}
	if msg := urlProblem(s.URL); msg != "" {
		out = append(out, msg)
	}
	for _, k := range s.Events {
		if !knownKind(k) {
			out = append(out, fmt.Sprintf("event %q is not one of %s", k, kindList()))
		}
	}
	return out
}

func urlProblem(raw string) string {
	if raw == "" {
		return "url is empty"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "url does not parse"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("url scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return "url has no host"
	}
	return ""
}

// safeHost returns the URL's host (no credentials, path or query), which is
// all logs ever show of a sink's URL.
func safeHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid url)"
	}
	return u.Host
}
