package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// seedTTL applies team/name with spec.ttl: ttl through the library.
func (h *harness) seedTTL(team, name, ttl string) {
	h.t.Helper()
	doc := strings.Replace(envDoc(team, name, envOpts{}), "  autoApprove: true\n", "  autoApprove: true\n  ttl: "+ttl+"\n", 1)
	env, diags := spec.Parse("env.yaml", h.t.TempDir(), []byte(doc))
	if diags.HasErrors() {
		h.t.Fatal(diags)
	}
	res, err := knit.NewRun(h.k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "seed", Source: "cli"}).Run(context.Background())
	if err != nil || res.Status != store.StatusSucceeded {
		h.t.Fatalf("apply %s/%s: %v %v", team, name, res, err)
	}
}

type auditItems struct {
	Items []struct{ Actor, Action, Reason, Detail, RunID string }
}

// TestTTLExtend: the API shows an ephemeral environment's expiry; an
// operator of its team extends it (audited with the actor and the new
// expiry); a viewer, another team's operator, a bad duration, an unknown
// environment and one without a ttl are refused.
func TestTTLExtend(t *testing.T) {
	h := newHarness(t)
	h.seedTTL("shop", "long", "72h")
	h.seed("shop", "plain", envOpts{}, "seed")
	op, viewer, other := h.token("shop-op", "operator", "shop"), h.token("shop-viewer", "viewer", "shop"), h.token("pay-op", "operator", "pay")

	var env struct{ ExpiresAt time.Time }
	h.do(call{method: "GET", path: "/api/v1/environments/shop/long", token: op}, 200).decode(t, &env)
	if env.ExpiresAt.IsZero() || env.ExpiresAt.Before(time.Now().Add(71*time.Hour)) {
		t.Fatalf("expiresAt = %s, want about now+72h", env.ExpiresAt)
	}
	var got struct {
		Env       string
		ExpiresAt time.Time
	}
	h.do(call{method: "POST", path: "/api/v1/environments/shop/long/ttl", token: op, body: map[string]any{"extend": "24h"}}, 200).decode(t, &got)
	if got.Env != "shop/long" || !got.ExpiresAt.Equal(env.ExpiresAt.Add(24*time.Hour)) {
		t.Fatalf("extended: %+v, want %s", got, env.ExpiresAt.Add(24*time.Hour))
	}
	h.do(call{method: "GET", path: "/api/v1/environments/shop/long", token: op}, 200).decode(t, &env)
	if !env.ExpiresAt.Equal(got.ExpiresAt) {
		t.Fatalf("the environment shows %s after the extension to %s", env.ExpiresAt, got.ExpiresAt)
	}
	var audit auditItems
	h.do(call{method: "GET", path: "/api/v1/audit?env=shop/long", token: op}, 200).decode(t, &audit)
	found := false
	for _, e := range audit.Items {
		if e.Action == knit.AuditTTLExtend && e.Actor == "shop-op" && strings.Contains(e.Detail, got.ExpiresAt.UTC().Format(time.RFC3339)) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no audit of the extension by shop-op: %+v", audit.Items)
	}

	ext := map[string]any{"extend": "1h"}
	h.do(call{method: "POST", path: "/api/v1/environments/shop/long/ttl", token: viewer, body: ext}, 403)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/long/ttl", token: other, body: ext}, 403)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/long/ttl", token: op, body: map[string]any{"extend": "0s"}}, 400)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/long/ttl", token: op, body: map[string]any{"extend": "soon"}}, 400)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/nope/ttl", token: op, body: ext}, 404)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/plain/ttl", token: op, body: ext}, 409)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/long/ttl", body: ext, invalid: true}, 401)
	h.do(call{method: "GET", path: "/api/v1/environments/shop/long", token: op}, 200).decode(t, &env)
	if !env.ExpiresAt.Equal(got.ExpiresAt) {
		t.Fatalf("a refused extension moved the expiry to %s", env.ExpiresAt)
	}
}

// TestTTLTearsDownAtExpiry: with ttl 5s, the server tears the environment
// down once it expires (a teardown run with source ttl and its reason,
// audited), and the expiry is gone.
func TestTTLTearsDownAtExpiry(t *testing.T) {
	h := newHarness(t)
	h.seedTTL("shop", "brief", "5s")
	op := h.token("shop-op", "operator", "shop")
	var env struct {
		Status    string
		ExpiresAt time.Time
	}
	h.do(call{method: "GET", path: "/api/v1/environments/shop/brief", token: op}, 200).decode(t, &env)
	if env.ExpiresAt.IsZero() {
		t.Fatal("no expiresAt on an environment with a ttl")
	}
	expiry := env.ExpiresAt
	deadline := time.Now().Add(4 * hangGuard) // a failure guard only
	// Torn down, then the expiry cleared as the teardown's end is followed.
	for env.Status != string(engine.EnvTornDown) || !env.ExpiresAt.IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: shop/brief is still %s, expired at %s", env.Status, expiry)
		}
		time.Sleep(50 * time.Millisecond)
		env.Status, env.ExpiresAt = "", time.Time{}
		h.do(call{method: "GET", path: "/api/v1/environments/shop/brief", token: op}, 200).decode(t, &env)
	}
	var runs struct {
		Items []struct{ Kind, Source, Reason, Status string }
	}
	h.do(call{method: "GET", path: "/api/v1/environments/shop/brief/runs", token: op}, 200).decode(t, &runs)
	reason := knit.ExpiredReason(expiry)
	if len(runs.Items) == 0 || runs.Items[0].Kind != "teardown" || runs.Items[0].Source != "ttl" || runs.Items[0].Reason != reason ||
		runs.Items[0].Status != string(store.StatusSucceeded) {
		t.Fatalf("last run %+v, want the ttl teardown (%s)", runs.Items, reason)
	}
	var audit auditItems
	h.do(call{method: "GET", path: "/api/v1/audit?env=shop/brief", token: op}, 200).decode(t, &audit)
	found := false
	for _, e := range audit.Items {
		if e.Action == knit.AuditTTLExpire && e.Reason == reason && e.RunID != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no ttl-expire audit event with reason %q: %+v", reason, audit.Items)
	}
}
