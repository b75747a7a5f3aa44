package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// ttlEnv is an environment of two files, web after net, with spec.ttl.
func ttlEnv(name, ttl string) string {
	doc := envFile(name, fileComp(name+"-net", "net", ""), fileComp(name+"-web", "web", "      dependsOn: ["+name+"-net]\n"))
	return strings.Replace(doc, "  autoApprove: true\n", "  autoApprove: true\n  ttl: "+ttl+"\n", 1)
}

// TestEphemeralEnvironmentThroughTheServer: environments applied with a
// ttl show their expiry (knit status, knit ttl, the API); knit serve tears
// the one with ttl 5s down once it expires, and its files are gone; an
// operator of the team extends the other through the server (audited,
// the expiry moves by exactly the extension); another team's operator
// may not.
func TestEphemeralEnvironmentThroughTheServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	w.writeFileEnv(ttlEnv("kept", "1h"))
	w.ok("apply", "-f", "env.yaml")
	w.writeFileEnv(ttlEnv("brief", "5s"))
	w.ok("apply", "-f", "env.yaml")

	var st struct{ ExpiresAt time.Time }
	if err := json.Unmarshal([]byte(w.ok("status", "qa/kept", "-o", "json").stdout), &st); err != nil || st.ExpiresAt.IsZero() {
		t.Fatalf("knit status -o json has no expiresAt (%v)", err)
	}
	kept := st.ExpiresAt
	if r := w.ok("status", "qa/kept"); !strings.Contains(r.stdout, "expires at ") {
		t.Fatalf("knit status shows no expiry:\n%s", r.stdout)
	}
	if r := w.ok("ttl", "qa/kept"); !strings.Contains(r.stdout, "qa/kept expires at ") {
		t.Fatalf("knit ttl:\n%s", r.stdout)
	}

	s := w.startServer("--ttl-tick", "100ms")
	s.eventually("qa/brief torn down at its expiry", func() bool { e, _ := s.env("qa/brief"); return e.Status == "torn-down" })
	for _, f := range []string{"files/brief-net.txt", "files/brief-web.txt"} {
		if w.exists(f) {
			t.Fatalf("%s is still there after the teardown", f)
		}
	}
	if !w.exists("files/kept-net.txt") {
		t.Fatal("qa/kept was torn down before its expiry")
	}
	var audit struct {
		Items []struct{ Action, Reason string }
	}
	s.do("GET", "/api/v1/audit?env=qa/brief", nil, &audit)
	expired := false
	for _, e := range audit.Items {
		expired = expired || (e.Action == "ttl-expire" && strings.HasPrefix(e.Reason, "ttl expired at "))
	}
	if !expired {
		t.Fatalf("no ttl-expire audit event: %+v", audit.Items)
	}

	op := strings.TrimSpace(w.ok("token", "create", "qa-op", "--role", "operator", "--team", "qa").stdout)
	other := strings.TrimSpace(w.ok("token", "create", "pay-op", "--role", "operator", "--team", "pay").stdout)
	r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + other}, "ttl", "qa/kept", "--extend", "24h")
	if r.code != 1 || !strings.Contains(r.stderr, "the server refused") {
		t.Fatalf("another team's operator extending: exit %d\n%s", r.code, r.stderr)
	}
	r = w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + op}, "ttl", "qa/kept", "--extend", "24h", "-o", "json")
	var x struct{ ExpiresAt time.Time }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &x) != nil || !x.ExpiresAt.Equal(kept.Add(24*time.Hour)) {
		t.Fatalf("knit ttl --extend 24h through the server: exit %d, want %s\n%s\n%s", r.code, kept.Add(24*time.Hour), r.stdout, r.stderr)
	}
	var ext struct {
		Items []struct{ Action, Actor, Detail string }
	}
	s.do("GET", "/api/v1/audit?env=qa/kept", nil, &ext)
	extended := false
	for _, e := range ext.Items {
		extended = extended || (e.Action == "ttl-extend" && e.Actor == "qa-op" && strings.Contains(e.Detail, x.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	if !extended {
		t.Fatalf("no ttl-extend audit event by qa-op: %+v", ext.Items)
	}
}
