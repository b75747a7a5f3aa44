package knit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// healthDoc is an environment whose rollout policy and health checks a
// diff compares; SECRET is in a check's URL and in a check's command.
const healthDoc = `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: NAME
  autoApprove: true
  rollout: {onFailure: ON}
  health:
    schedule: "SCHED"
    checks:
      - {name: site, http: {url: "URL/NAME/ping"}, interval: 10ms}
  components:
    - name: app
      type: script
      script: {apply: "true"}
      health:
        - {name: ok, http: {url: "URL/NAME/health?token=SECRET", expectStatus: STATUS}, interval: 10ms}
        - {name: cli, command: "echo 'Authorization: Bearer SECRET' >/dev/null", count: COUNT, interval: 10ms}
`

// Issue 37 item 10: knit diff compares health checks and the rollout
// policy too; a URL or command carrying a credential is masked on both
// sides and its value is nowhere in the answer.
func TestDiffComparesHealthAndRolloutAndMasksTheirSecrets(t *testing.T) {
	ctx := context.Background()
	k := openDiff(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/prod/health" {
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	for _, e := range []struct{ name, on, sched, secret, status, count string }{
		{"dev", "none", "@every 5m", "dev-tok-123", "200", "1"},
		{"prod", "rollback", "@every 1m", "prod-tok-456", "204", "3"},
	} {
		doc := strings.NewReplacer("URL", srv.URL, "NAME", e.name, "ON", e.on, "SCHED", e.sched, "SECRET", e.secret, "STATUS", e.status, "COUNT", e.count).Replace(healthDoc)
		if res := apply(t, k, parse(t, doc), "alice", true); res.Status != store.StatusSucceeded {
			t.Fatalf("apply %s: %s %s", e.name, res.Status, res.Error)
		}
	}
	d, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", B: "shop/prod"})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]view.FieldDiff{}
	for _, f := range d.Environment {
		env[f.Field] = f
	}
	for field, want := range map[string][2]any{
		"rollout.onFailure":           {"none", "rollback"},
		"health.schedule":             {"@every 5m", "@every 1m"},
		"health.checks.site.http.url": {srv.URL + "/dev/ping", srv.URL + "/prod/ping"},
	} {
		if f, ok := env[field]; !ok || f.Sides.A != want[0] || f.Sides.B != want[1] || f.Sides.Sensitive {
			t.Errorf("%s: %+v (present %v), want %v → %v", field, f, ok, want[0], want[1])
		}
	}
	app := componentOf(d, "app")
	if app.Change != view.ComponentChanged {
		t.Errorf("app: %s, want changed", app.Change)
	}
	for _, field := range []string{"health.ok.http.url", "health.cli.command"} {
		if f, ok := fieldOf(app, field); !ok || !f.Sides.Sensitive || f.Sides.A != knit.Masked || f.Sides.B != knit.Masked {
			t.Errorf("%s: %+v (present %v), want masked on both sides", field, f, ok)
		}
	}
	if f, ok := fieldOf(app, "health.ok.http.expectStatus"); !ok || mustJSONString(f.Sides.A) != "200" || mustJSONString(f.Sides.B) != "204" {
		t.Errorf("expectStatus: %+v (present %v)", f, ok)
	}
	if f, ok := fieldOf(app, "health.cli.count"); !ok || mustJSONString(f.Sides.B) != "3" {
		t.Errorf("count: %+v (present %v)", f, ok)
	}
	b, _ := json.Marshal(d)
	for _, s := range []string{"dev-tok-123", "prod-tok-456"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the diff shows the secret %q: %s", s, b)
		}
	}
	if d.Same {
		t.Error("the diff says the two are the same")
	}
}

func mustJSONString(v any) string { return string(mustJSON(v)) }
