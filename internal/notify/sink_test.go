package notify

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/words"
)

func TestNewRejectsBadSinks(t *testing.T) {
	ok := Sink{Name: "ok", Kind: SinkWebhook, URL: "https://hooks.example/x", Secret: "k"}
	tests := []struct {
		name  string
		sinks []Sink
		want  []string // every line of the error, in order
	}{
		{"unknown kind", []Sink{{Name: "t", Kind: "teams", URL: "https://x.example"}},
			[]string{`notify: sinks[0] "t": kind "teams" is not "webhook" or "slack"`}},
		{"webhook without secret", []Sink{{Name: "w", Kind: SinkWebhook, URL: "https://x.example"}},
			[]string{`notify: sinks[0] "w": a webhook sink needs a secret to sign its requests`}},
		{"bad scheme", []Sink{{Name: "s", Kind: SinkSlack, URL: "ftp://x.example/hook"}},
			[]string{`notify: sinks[0] "s": url scheme "ftp" is not http or https`}},
		{"no host", []Sink{{Name: "s", Kind: SinkSlack, URL: "https:///hook"}},
			[]string{`notify: sinks[0] "s": url has no host`}},
		{"unparsable url", []Sink{{Name: "s", Kind: SinkSlack, URL: "https://x.example/%zz?token=SECRET"}},
			[]string{`notify: sinks[0] "s": url does not parse`}},
		{"unknown event", []Sink{{Name: "s", Kind: SinkSlack, URL: "https://x.example", Events: []string{"drift.found", "run-started"}}},
			[]string{`notify: sinks[0] "s": event "run-started" is not one of run.failed, run.succeeded, drift.found, approval.needed, teardown.done, invalid.revision, ttl.expiring, preview.ready, rollout.failed, rollback.done, drift.resolved, release.awaiting-approval, release.window-closed, release.verified, release.failed, stage.pending, rollout.step, rollout.aborted, rollout.promoted`}},
		{"duplicate name", []Sink{ok, ok},
			[]string{`notify: sinks[1] "ok": name is used by an earlier sink`}},
		{"everything at once", []Sink{ok, {Kind: "email"}},
			[]string{
				`notify: sinks[1]: name is empty`,
				`notify: sinks[1]: kind "email" is not "webhook" or "slack"`,
				`notify: sinks[1]: url is empty`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(tt.sinks, Options{})
			if err == nil {
				t.Fatalf("New = %v, want an error", d)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("error:\n%s\nwant:\n%s", got, want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error quotes the URL: %v", err)
			}
		})
	}
}

func TestNewAcceptsGoodSinks(t *testing.T) {
	_, err := New([]Sink{
		{Name: "ops", Kind: SinkWebhook, URL: "https://hooks.example/knit", Secret: "k", Events: []string{string(KindRunFailed)}},
		{Name: "chat", Kind: SinkSlack, URL: "http://127.0.0.1:8080/services/T/B/x"},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEveryKindIsSpeltOneWay: every event kind is subject.event, and each
// old spelling names one of them.
func TestEveryKindIsSpeltOneWay(t *testing.T) {
	one := regexp.MustCompile(`^[a-z]+\.[a-z]+(-[a-z]+)*$`)
	for _, k := range Kinds() {
		if !one.MatchString(string(k)) {
			t.Errorf("event kind %q is not spelt subject.event", k)
		}
	}
	for old, k := range words.OldNotifySpellings() {
		if !slices.Contains(Kinds(), k) || Canonical(old) != k || !knownKind(old) {
			t.Errorf("old spelling %q names %q, not a kind", old, k)
		}
	}
}
