package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// stageEnv is one stage of a shop; the fake runner gives shop-db a host
// and a sensitive password output.
const stageEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: shop
  envName: NAME
  autoApprove: true
  components:
    - name: shop-db
      type: script
      script: {apply: "true"}
      outputs: [{name: host}, {name: password, sensitive: true}]
    - name: shop-web
      type: script
      script: {apply: "true"}
      variables:
        - {name: replicas, value: REPLICAS}
        - {name: admin_password, value: SECRET}
`

func (h *harness) seedStage(name, replicas, secret string) {
	h.t.Helper()
	doc := strings.NewReplacer("NAME", name, "REPLICAS", replicas, "SECRET", secret).Replace(stageEnv)
	env, diags := spec.Parse("env.yaml", h.t.TempDir(), []byte(doc))
	if diags.HasErrors() {
		h.t.Fatal(diags)
	}
	res, err := knit.NewRun(h.k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "seed", Source: "cli"}).Run(context.Background())
	if err != nil || res.Status != store.StatusSucceeded {
		h.t.Fatalf("seed %s: %v %v", name, res, err)
	}
}

func TestDiffEnvironmentsOverTheAPI(t *testing.T) {
	h := newHarness(t)
	viewer := h.token("watcher", "viewer")
	shop := h.token("shop-ci", "viewer", "shop")
	pay := h.token("pay-ci", "viewer", "pay")
	h.seedStage("dev", "1", "dev-Sup3rSecret")
	h.seedStage("prod", "3", "prod-Sup3rSecret")

	var d view.EnvDiff
	r := h.do(call{method: "GET", path: "/api/v1/diff?a=shop/prod&b=shop/dev", token: shop}, 200)
	r.decode(t, &d)
	if strings.Contains(string(r.body), "Sup3rSecret") || strings.Contains(string(r.body), `"pw"`) {
		t.Fatalf("a secret leaked into the response:\n%s", r.body)
	}
	if d.A.Env != "shop/prod" || d.B.Env != "shop/dev" || d.Same || len(d.Components) != 2 {
		t.Fatalf("diff %+v", d)
	}
	web, db := d.Components[1], d.Components[0]
	var fields []string
	for _, f := range web.Fields {
		fields = append(fields, f.Field+"="+string(mustJSON(t, f.A))+">"+string(mustJSON(t, f.B)))
	}
	if got := strings.Join(fields, " "); got != `variables.replicas=3>1 variables.admin_password="(sensitive)">"(sensitive)"` {
		t.Errorf("shop-web fields: %s", got)
	}
	var outs []string
	for _, o := range db.Outputs {
		outs = append(outs, o.Name+"="+string(mustJSON(t, o.A))+"|"+string(mustJSON(t, o.B)))
	}
	if got := strings.Join(outs, " "); db.Change != view.ComponentSame || got != `host="db.internal"|"db.internal" password="(sensitive)"|"(sensitive)"` {
		t.Errorf("shop-db %s: outputs %s", db.Change, got)
	}

	// Revisions of one environment.
	h.do(call{method: "GET", path: "/api/v1/diff?a=shop/dev@1&b=shop/dev@1", token: viewer}, 200).decode(t, &d)
	if !d.Same {
		t.Errorf("a revision differs from itself: %+v", d)
	}
	h.do(call{method: "GET", path: "/api/v1/diff?a=shop/dev@1&b=shop/dev@7", token: viewer}, 404)
	h.do(call{method: "GET", path: "/api/v1/diff?a=shop/dev&b=shop/nope", token: viewer}, 404)

	// Mistakes in the request.
	h.do(call{method: "GET", path: "/api/v1/diff?a=shop/dev", token: viewer, invalid: true}, 400)
	h.do(call{method: "GET", path: "/api/v1/diff?a=dev&b=shop/prod", token: viewer}, 400)
	h.do(call{method: "GET", path: "/api/v1/diff?a=shop/dev@x&b=shop/prod", token: viewer}, 400)
	h.do(call{method: "GET", path: "/api/v1/diff?a=shop/dev&b=shop/prod", invalid: true}, 401)

	// Another team's token: refused, in the same words whether the
	// environment exists or not, on either side.
	exists := h.do(call{method: "GET", path: "/api/v1/diff?a=shop/dev&b=shop/prod", token: pay}, 403)
	ghost := h.do(call{method: "GET", path: "/api/v1/diff?a=shop/ghost&b=shop/prod", token: pay}, 403)
	if strings.Replace(string(ghost.body), "ghost", "dev", 1) != string(exists.body) {
		t.Errorf("403 bodies tell an existing environment from a missing one:\n%s\n%s", exists.body, ghost.body)
	}
	h.seed("pay", "api", envOpts{}, "seed")
	b := h.do(call{method: "GET", path: "/api/v1/diff?a=pay/api&b=shop/prod", token: pay}, 403)
	ghostB := h.do(call{method: "GET", path: "/api/v1/diff?a=pay/api&b=shop/ghost", token: pay}, 403)
	if strings.Replace(string(ghostB.body), "ghost", "prod", 1) != string(b.body) || strings.Contains(string(b.body), "Sup3rSecret") {
		t.Errorf("403 bodies for side b differ: %s / %s", b.body, ghostB.body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
