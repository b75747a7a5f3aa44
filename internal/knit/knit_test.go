package knit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

const doc = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: TEAM
  envName: NAME
  autoApprove: true
  components:
    - name: db
      type: script
      script: {apply: "true"}
      outputs: [{name: host}, {name: password, sensitive: true}]
    - name: app
      type: script
      autoApprove: false
      script: {apply: "true"}
      variables: [{name: db, valueFrom: db.host}, {name: size, value: 1}]
`

func envDoc(team, name string) string {
	return strings.NewReplacer("TEAM", team, "NAME", name).Replace(doc)
}

func parse(t *testing.T, d string) *spec.Environment {
	t.Helper()
	env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(d))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return env
}

func open(t *testing.T) *knit.Knit {
	t.Helper()
	r := &fake.Runner{OutputsFor: func(name string, _ runner.Inputs) runner.Outputs {
		if name == "db" {
			return runner.Outputs{"host": {Value: "db.internal"}, "password": {Value: "pw", Sensitive: true}}
		}
		return nil
	}}
	k, err := adapters.Open(context.Background(), adapters.Config{Config: knit.Config{DataDir: t.TempDir(), Runners: map[string]runner.Runner{spec.TypeScript: r}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func apply(t *testing.T, k *knit.Knit, env *spec.Environment, actor string, auto bool) *engine.Result {
	t.Helper()
	res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: actor, AutoApprove: auto}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestReadModelsAnswerWhatTheCLIAndServerShow(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	env := parse(t, envDoc("pay", "prod"))
	if res := apply(t, k, env, "alice", false); res.Status != store.StatusAwaiting {
		t.Fatalf("first apply %s", res.Status)
	}
	v, err := knit.NewRecords(k).Environment(ctx, "pay/prod")
	if err != nil {
		t.Fatal(err)
	}
	if v.AppliedRevision != 1 || len(v.Components) != 2 || v.Lock != nil {
		t.Fatalf("view %+v", v)
	}
	db, app := v.Components[0], v.Components[1]
	if db.Name != "db" || db.Status != "applied" || app.Status != "awaiting-approval" ||
		app.Code != "awaiting-approval: plan has changes" || app.LastPlan == nil || app.LastPlan.Add != 1 ||
		len(app.DependsOn) != 1 || app.DependsOn[0] != "db" {
		t.Fatalf("components %+v / %+v", db, app)
	}
	// By metadata name too.
	if _, err := knit.NewRecords(k).Environment(ctx, "prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := knit.NewRecords(k).Environment(ctx, "pay/nope"); err == nil || !strings.Contains(err.Error(), "known: pay/prod") {
		t.Fatalf("unknown environment: %v", err)
	}

	outs, err := knit.NewRecords(k).Outputs(ctx, "pay/prod", "")
	if err != nil {
		t.Fatal(err)
	}
	if outs["db"]["password"].Value != knit.Masked || outs["db"]["host"].Value != "db.internal" {
		t.Fatalf("masked outputs %+v", outs)
	}
	if outs, _ := knit.NewReveal(k, "pay/prod", "db", "t").Run(ctx); outs["db"]["password"].Value != "pw" {
		t.Fatalf("revealed outputs %+v", outs)
	}

	pending, err := knit.NewRecords(k).Approvals(ctx, "pay/prod", store.ApprovalPending)
	if err != nil || len(pending) != 1 || pending[0].Component != "app" {
		t.Fatalf("approvals %+v %v", pending, err)
	}
	if _, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "prod", Component: "app", Approve: true, Actor: "bob", Reason: "ok",
		PlanChecksum: pending[0].PlanChecksum}, nil).Run(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, EnvRef: "pay/prod", Actor: "bob", Source: "api"}).Run(ctx)
	if err != nil || res.Status != store.StatusSucceeded || res.Component("app").Status != engine.Applied {
		t.Fatalf("apply after approval: %+v %v", res, err)
	}

	// History pages, newest first.
	first, err := knit.NewRecords(k).History(ctx, "pay/prod", "", 1)
	if err != nil || len(first.Items) != 1 || first.Next == "" || first.Items[0].Actor != "bob" || first.Items[0].Source != "api" {
		t.Fatalf("history page 1 %+v %v", first, err)
	}
	second, err := knit.NewRecords(k).History(ctx, "pay/prod", first.Next, 1)
	if err != nil || len(second.Items) != 1 || second.Items[0].Actor != "alice" || second.Next != "" {
		t.Fatalf("history page 2 %+v %v", second, err)
	}
	// Audit by actor.
	bob, err := knit.NewRecords(k).Audit(ctx, knit.AuditFilter{Actor: "bob"})
	if err != nil || len(bob.Items) != 2 || bob.Items[0].Action != "approve" || bob.Items[1].Action != "apply" {
		t.Fatalf("bob's audit %+v %v", bob, err)
	}
	revs, err := knit.NewRecords(k).Revisions(ctx, "pay/prod", "", 0)
	if err != nil || len(revs.Items) != 1 || revs.Items[0].Number != 1 {
		t.Fatalf("revisions %+v %v", revs, err)
	}
	logs, err := knit.NewRecords(k).Logs(ctx, "pay/prod", "app")
	if err != nil || !strings.Contains(logs.Log, "applied app") {
		t.Fatalf("logs %+v %v", logs, err)
	}
}

func TestEnvironmentsArePagedAndFilteredOnTheServer(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	for _, id := range []string{"a/one", "a/two", "b/three"} {
		team, name, _ := strings.Cut(id, "/")
		apply(t, k, parse(t, envDoc(team, name)), "ci", true)
	}
	p1, err := k.Environments(ctx, knit.EnvironmentFilter{Limit: 2})
	if err != nil || len(p1.Items) != 2 || p1.Items[0].ID != "a/one" || p1.Next != "a/two" || p1.Items[0].LastRun == nil {
		t.Fatalf("page 1 %+v %v", p1, err)
	}
	p2, err := k.Environments(ctx, knit.EnvironmentFilter{Limit: 2, After: p1.Next})
	if err != nil || len(p2.Items) != 1 || p2.Items[0].ID != "b/three" || p2.Next != "" {
		t.Fatalf("page 2 %+v %v", p2, err)
	}
	team, err := k.Environments(ctx, knit.EnvironmentFilter{Team: "b"})
	if err != nil || len(team.Items) != 1 {
		t.Fatalf("team b %+v %v", team, err)
	}
	none, err := k.Environments(ctx, knit.EnvironmentFilter{Status: "failed"})
	if err != nil || len(none.Items) != 0 {
		t.Fatalf("failed ones %+v %v", none, err)
	}
}

func TestTwelveEnvironmentsAppliedConcurrentlyThroughOneLibrary(t *testing.T) {
	k := open(t)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply,
				Env: parse(t, envDoc("load", fmt.Sprintf("e%02d", i))), AutoApprove: true, Actor: "ci"}).Start(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			if _, ok := k.Lookup(r.ID); !ok {
				t.Errorf("run %s not found by ID", r.ID)
			}
			res, err := r.Wait(context.Background())
			if err != nil || res.Status != store.StatusSucceeded {
				t.Errorf("env %d: %v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	page, err := k.Environments(context.Background(), knit.EnvironmentFilter{Team: "load", Limit: 100})
	if err != nil || len(page.Items) != 12 {
		t.Fatalf("%d environments, %v", len(page.Items), err)
	}
	for _, e := range page.Items {
		if e.Status != "provisioned" {
			t.Errorf("%s: %s", e.ID, e.Status)
		}
	}
}

// TestDecideIsAuthorizedAgainstTheResolvedEnvironment: the library is the
// door every adapter decides through. A token of team ops may not decide
// pay/prod, whose metadata name is "ops", by ID or by that name; an error
// hint never names another team's environment; a decision without the
// plan's checksum is refused. Nothing of it changes the waiting approval.
func TestDecideIsAuthorizedAgainstTheResolvedEnvironment(t *testing.T) {
	bg := context.Background()
	k := open(t)
	apply(t, k, parse(t, strings.Replace(envDoc("pay", "prod"), "metadata: {name: prod}", "metadata: {name: ops}", 1)), "alice", false)
	apply(t, k, parse(t, envDoc("ops", "web")), "alice", true)
	pending, err := knit.NewRecords(k).Approvals(bg, "pay/prod", store.ApprovalPending)
	if err != nil || len(pending) != 1 {
		t.Fatalf("approvals %+v %v", pending, err)
	}
	sum := pending[0].PlanChecksum
	ops := knit.WithCaller(bg, view.Token{Name: "ops-operator", Role: store.RoleOperator, Teams: []string{"ops"}})
	for _, ref := range []string{"pay/prod", "ops"} {
		for _, approve := range []bool{true, false} {
			_, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: ref, Component: "app", Approve: approve, Actor: "ops-operator", PlanChecksum: sum}, nil).Run(ops)
			if !errors.Is(err, knit.ErrForbidden) {
				t.Errorf("team ops deciding %s (approve %v): %v, want forbidden", ref, approve, err)
			}
		}
	}
	if _, err := knit.NewRecords(k).Environment(ops, "ops/nope"); !errors.Is(err, knit.ErrNotFound) || strings.Contains(err.Error(), "pay/") ||
		!strings.Contains(err.Error(), "ops/web") {
		t.Errorf("unknown environment as team ops: %v", err)
	}
	if _, err := knit.NewRecords(k).Environment(bg, "ops/nope"); err == nil || !strings.Contains(err.Error(), "pay/prod") {
		t.Errorf("unknown environment locally (every team): %v", err)
	}
	_, err = knit.NewDecide(k, knit.DecideRequest{EnvRef: "pay/prod", Component: "app", Approve: true, Actor: "bob"}, nil).Run(bg)
	if !errors.Is(err, knit.ErrChecksumRequired) {
		t.Errorf("a decision without the checksum: %v", err)
	}
	if after, _ := knit.NewRecords(k).Approvals(bg, "pay/prod", store.ApprovalPending); len(after) != 1 || after[0].ID != pending[0].ID {
		t.Fatalf("a refused decision changed the approval: %+v", after)
	}
}
