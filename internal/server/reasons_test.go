package server_test

import (
	"context"
	"slices"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// gateDoc is an environment whose db waits for approval and whose app
// takes db's output.
const gateDoc = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: gate}
spec:
  teamName: pay
  envName: gate
  components:
    - name: db
      type: script
      autoApprove: false
      script: {apply: "true"}
      outputs: [{name: host}]
    - name: app
      type: script
      autoApprove: true
      script: {apply: "true"}
      variables: [{name: db, valueFrom: db.host}]
`

// TestWaitingOnAnUpstreamApprovalIsAReason: a component waiting behind a
// plan that awaits approval says so as data in every API answer (the
// environment, the run, its events): reasonCode UpstreamAwaitingApproval
// with upstream ["db"], and the held one AwaitingApproval with its
// approval's ID. The harness checks each answer against the document, so
// the values are the enum's.
func TestWaitingOnAnUpstreamApprovalIsAReason(t *testing.T) {
	h := newHarness(t)
	op := h.token("ci", "operator")
	env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(gateDoc))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if _, err := knit.NewRun(h.k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "seed", Source: "cli"}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := h.waiting("pay/gate", op)

	type cause struct {
		Name, Component, Status, ReasonCode string
		Upstream                            []string
		ApprovalID                          int64
	}
	check := func(where string, got []cause) {
		t.Helper()
		byName := map[string]cause{}
		for _, c := range got {
			byName[c.Name+c.Component] = c
		}
		app, db := byName["app"], byName["db"]
		if app.ReasonCode != string(engine.ReasonUpstreamAwaitingApproval) || !slices.Equal(app.Upstream, []string{"db"}) {
			t.Errorf("%s: app = %+v, want reasonCode UpstreamAwaitingApproval, upstream [db]", where, app)
		}
		if db.ReasonCode != string(engine.ReasonAwaitingApproval) || db.ApprovalID != a.ID || len(db.Upstream) != 0 {
			t.Errorf("%s: db = %+v, want reasonCode AwaitingApproval, approvalId %d", where, db, a.ID)
		}
	}

	var v struct {
		Components []cause
		LastRun    struct{ ID string }
	}
	h.do(call{method: "GET", path: "/api/v1/environments/pay/gate", token: op}, 200).decode(t, &v)
	check("GET /environments/pay/gate", v.Components)
	runID := v.LastRun.ID // the API's apply, which holds the seed's approval again

	var run struct{ Components []cause }
	h.do(call{method: "GET", path: "/api/v1/runs/" + runID, token: op}, 200).decode(t, &run)
	check("GET /runs/"+runID, run.Components)

	var last []cause
	seen := map[string]cause{}
	for _, ev := range h.stream(call{method: "GET", path: "/api/v1/runs/" + runID + "/events", token: op}).rest(h) {
		if e := eventData(t, ev); e.Kind == engine.ComponentStatus && e.Status.IsTerminal() {
			seen[e.Component] = cause{Component: e.Component, Status: string(e.Status), ReasonCode: e.ReasonCode,
				Upstream: e.Upstream, ApprovalID: e.ApprovalID}
		}
	}
	for _, c := range seen {
		last = append(last, c)
	}
	check("the run's events", last)
	if run := h.waitRun(runID, op); run["status"] != string(store.StatusAwaiting) {
		t.Fatalf("run %+v", run)
	}
}
