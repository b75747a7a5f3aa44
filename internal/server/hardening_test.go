package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// cutGuard is how long a connection the server should cut may stay open
// before a test fails: far above the one-second limits these tests set, so
// a busy machine never fails them, and far below "never".
const cutGuard = 20 * time.Second

// shortLimits are HTTP limits of one second.
func shortLimits() server.Config {
	return server.Config{HTTP: server.HTTPLimits{ReadTimeout: time.Second, IdleTimeout: time.Second}}
}

// dial opens a raw connection to the harness's server.
func (h *harness) dial() net.Conn {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed reads c until the server closes it, failing the test if that
// takes longer than cutGuard. It returns what was read.
func waitClosed(t *testing.T, c net.Conn, what string) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(cutGuard))
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: still open after %s (read %q)", what, cutGuard, b)
	}
	return string(b)
}

// TestSlowBodyIsCutWithinTheReadTimeout: an unauthenticated webhook POST
// that announces 100 bytes and sends 2 holds its connection no longer than
// the read timeout.
func TestSlowBodyIsCutWithinTheReadTimeout(t *testing.T) {
	h := newHarnessWith(t, shortLimits())
	c := h.dial()
	if _, err := io.WriteString(c, "POST /api/v1/webhooks/git HTTP/1.1\r\nHost: knit\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	got := waitClosed(t, c, "a slow webhook body")
	if got != "" && !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Errorf("the server answered a cut body with %q", firstLineOf(got))
	}
}

// TestIdleConnectionIsClosedWithinTheIdleTimeout: a keep-alive connection
// with no second request is closed after the idle timeout.
func TestIdleConnectionIsClosedWithinTheIdleTimeout(t *testing.T) {
	h := newHarnessWith(t, shortLimits())
	c := h.dial()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: knit\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("healthz: %d, close %v", resp.StatusCode, resp.Close)
	}
	c.SetReadDeadline(time.Now().Add(cutGuard))
	if _, err := br.ReadByte(); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an idle keep-alive connection is still open after %s", cutGuard)
	} else if err != io.EOF {
		t.Fatalf("idle connection: %v", err)
	}
}

// TestEventStreamOutlivesTheReadTimeout: an event stream is not a slow
// request: it stays open past the read timeout and delivers the run's end.
func TestEventStreamOutlivesTheReadTimeout(t *testing.T) {
	h := newHarnessWith(t, shortLimits())
	root := h.token("root", "admin")
	h.seed("shop", "dev", envOpts{}, "seed")
	runID, held := h.heldRun("shop/dev", "plan", "plan", "dev-db", root)
	s := h.stream(call{method: "GET", path: "/api/v1/runs/" + runID + "/events", token: root})
	// Past the read timeout (the stream must not depend on it) ...
	time.Sleep(3 * time.Second)
	held.Release()
	// ... the stream goes on to the run's end.
	evs := s.rest(h)
	if len(evs) == 0 || evs[len(evs)-1].Event != "run-finished" {
		t.Fatalf("the stream ended early: %d events, last %+v", len(evs), evs)
	}
}

// TestConnectionsBeyondTheCapWait: with MaxConns 2 and two connections
// open, a third is served only once one of them closes.
func TestConnectionsBeyondTheCapWait(t *testing.T) {
	h := newHarnessWith(t, server.Config{HTTP: server.HTTPLimits{MaxConns: 2}})
	get := func(c net.Conn, br *bufio.Reader, deadline time.Duration) error {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: knit\r\n\r\n"); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(deadline))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	a, b := h.dial(), h.dial()
	for _, c := range []net.Conn{a, b} {
		if err := get(c, bufio.NewReader(c), hangGuard); err != nil {
			t.Fatal(err)
		}
	}
	third := h.dial()
	br := bufio.NewReader(third)
	// Not a timing assertion: however slow the machine, a capped server
	// does not answer; only a server without a cap answers in time.
	if err := get(third, br, 500*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection was served beside two open ones (cap 2): %v", err)
	}
	a.Close()
	third.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the third connection once the first closed: %v", err)
	}
	resp.Body.Close()
}

// TestUnknownEnvironmentHintNamesOnlyTheCallersTeams: the 404 for an
// unknown environment lists the environments the token may see, never
// another team's.
func TestUnknownEnvironmentHintNamesOnlyTheCallersTeams(t *testing.T) {
	h := newHarness(t)
	ops := h.token("ops-operator", "operator", "ops")
	root := h.token("root", "admin")
	h.seed("pay", "prod", envOpts{}, "seed")
	h.seed("ops", "web", envOpts{}, "seed")
	r := h.do(call{method: "GET", path: "/api/v1/environments/ops/nope", token: ops}, 404)
	if body := string(r.body); strings.Contains(body, "pay/") || !strings.Contains(body, "ops/web") {
		t.Errorf("team ops's hint: %s", body)
	}
	if r := h.do(call{method: "GET", path: "/api/v1/environments/ops/nope", token: root}, 404); !strings.Contains(string(r.body), "pay/prod") {
		t.Errorf("an admin's hint lacks pay/prod: %s", r.body)
	}
}

// TestUnknownRunStreamIs404AtOnce: the event stream of a run nobody knows
// ends at once with 404.
func TestUnknownRunStreamIs404AtOnce(t *testing.T) {
	h := newHarness(t)
	root := h.token("root", "admin")
	h.do(call{method: "GET", path: "/api/v1/runs/20260101T000000-nope/events", token: root}, 404)
}

// TestTeamLimitedOperatorCannotDecideAnotherTeamsPlanThroughTheAPI: an
// operator of team ops may neither approve nor reject pay/prod (whose
// metadata name is "ops"): 403, and nothing is applied. A decision without
// the plan's checksum is refused for anyone.
func TestTeamLimitedOperatorCannotDecideAnotherTeamsPlanThroughTheAPI(t *testing.T) {
	h := newHarness(t)
	root := h.token("root", "admin")
	ops := h.token("ops-operator", "operator", "ops")
	h.seedNamed("pay", "prod", "ops", envOpts{gated: true})
	a := h.waiting("pay/prod", root)
	for _, verb := range []string{"approve", "reject"} {
		r := h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/components/prod-app/" + verb, token: ops,
			body: map[string]any{"planChecksum": a.PlanChecksum}}, 403)
		if strings.Contains(string(r.body), "approved") {
			t.Errorf("%s: %s", verb, r.body)
		}
		// By the metadata name ("ops" is pay/prod's) the library refuses too.
		h.do(call{method: "GET", path: "/api/v1/approvals?env=ops", token: ops}, 403)
		h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/components/prod-app/" + verb, token: root,
			body: map[string]any{"reason": "no checksum"}, invalid: true}, 400)
	}
	if calls := applies(h, "prod-app"); calls != 0 || h.componentStatus("pay/prod", "prod-app", root) != "awaiting-approval" {
		t.Fatalf("a refused decision applied something: %d applies", calls)
	}
	var page struct{ Items []approvalItem }
	h.do(call{method: "GET", path: "/api/v1/approvals?env=pay/prod", token: root}, 200).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].Status != store.ApprovalPending || page.Items[0].ID != a.ID {
		t.Fatalf("after refused decisions: %+v", page.Items)
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// seedNamed seeds team/name as seed does, under another metadata name.
func (h *harness) seedNamed(team, name, metadata string, o envOpts) {
	h.t.Helper()
	doc := strings.Replace(envDoc(team, name, o), "metadata: {name: "+name+"}", "metadata: {name: "+metadata+"}", 1)
	env, diags := spec.Parse("env.yaml", h.t.TempDir(), []byte(doc))
	if diags.HasErrors() {
		h.t.Fatal(diags)
	}
	if _, err := knit.NewRun(h.k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "seed", Source: "cli"}).Run(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// TestBodiesAreCapped: every POST body is bounded, the unauthenticated
// webhook's and the dashboard's sign-in form's included.
func TestBodiesAreCapped(t *testing.T) {
	h := newHarnessWith(t, server.Config{HTTP: server.HTTPLimits{MaxBodyBytes: 1 << 10}})
	viewer := h.token("viewer", "viewer")
	body := `{"pad":"` + strings.Repeat("x", 2<<10) + `"}`
	h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: body, header: signed(webhookSecret, body)}, 400)
	form := url.Values{"token": {viewer}, "next": {"/"}, "pad": {strings.Repeat("x", 2<<10)}}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(h.base+"/login", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther {
		t.Errorf("a sign-in form of %d bytes was taken", len(form.Encode()))
	}
}
