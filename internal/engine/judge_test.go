package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/policy"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/store"
)

// judge compiles one Rego file into a Judge.
func judge(t *testing.T, rego string) engine.Judge {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

const noDestroy = `package knit

deny contains {"msg": "no destroy", "component": c.name} if {
	some c in input.components
	c.changes.destroy > 0
}
`

func TestAPolicyDenyStopsATeardownBeforeAnythingIsDestroyed(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, diamond)
	before := len(h.r.Calls("destroy")) + len(h.r.Calls("apply"))
	res, err := h.e.Teardown(ctx, env, engine.Options{Actor: "tester", AutoApprove: true, Judge: judge(t, noDestroy)})
	var denied *engine.PolicyDeniedError
	if !errors.As(err, &denied) || len(denied.Denials) != 4 {
		t.Fatalf("teardown: %v, want a PolicyDeniedError naming the 4 components", err)
	}
	if n := len(h.r.Calls("destroy")) + len(h.r.Calls("apply")) - before; n != 0 {
		t.Fatalf("%d destroys or applies ran despite the denial", n)
	}
	if res.Status != store.StatusFailed || res.Policy == nil || !res.Policy.Denied() {
		t.Fatalf("run %s, policy %+v", res.Status, res.Policy)
	}
	for _, c := range res.Components {
		wantCause(t, res, c.Name, engine.ReasonPolicyDenied.Cause())
	}
	rec, err := h.st.Run(ctx, res.RunID)
	if err != nil || !strings.Contains(string(rec.Policy), `"rule":"deny"`) {
		t.Fatalf("the run's record lacks its decisions: %s (%v)", rec.Policy, err)
	}
}

func TestOverridePolicyLetsADeniedRunGoOnAndIsAudited(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, diamond)
	before := len(h.r.Calls("destroy")) + len(h.r.Calls("apply"))
	res, err := h.e.Teardown(ctx, env, engine.Options{Actor: "root", AutoApprove: true, Judge: judge(t, noDestroy), OverridePolicy: "CAB-7 signed off"})
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("teardown with an override: %v %v", res, err)
	}
	if len(h.r.Calls("destroy"))+len(h.r.Calls("apply")) == before {
		t.Fatal("nothing was destroyed")
	}
	audit, _ := h.st.Audit(ctx, store.AuditFilter{})
	var override, deny bool
	for _, e := range audit {
		override = override || (e.Action == "policy-override" && e.Actor == "root" && strings.Contains(e.Detail, "CAB-7 signed off"))
		deny = deny || e.Action == "policy-deny"
	}
	if !override || !deny {
		t.Fatalf("the audit trail lacks the denial or its override: %+v", audit)
	}
}

func TestADriftReconcileIsJudgedBeforeItApplies(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, diamond)
	h.r.Drift("d")
	applies := len(h.r.Calls("apply"))
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester", Judge: judge(t, `package knit

deny contains "no reconcile" if input.run.kind == "drift"
`)}, true)
	var denied *engine.PolicyDeniedError
	if !errors.As(err, &denied) {
		t.Fatalf("reconcile: %v, want a PolicyDeniedError", err)
	}
	if n := len(h.r.Calls("apply")) - applies; n != 0 {
		t.Fatalf("%d applies ran despite the denial", n)
	}
	if res.Component("d").Status != engine.Drifted {
		t.Fatalf("d: %s, want drifted (reported, not reconciled)", res.Component("d").Status)
	}
}

func TestRequireApprovalGatesAnAutoApprovedComponent(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	res, err := h.e.Apply(ctx, parse(t, diamond), engine.Options{Actor: "tester", AutoApprove: true, Judge: judge(t, `package knit

require_approval contains {"msg": "d is special", "component": "d"} if true

warn contains "heads up" if true
`)})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Component("d")
	if d.Status != engine.Awaiting || !strings.Contains(d.Reason, "a policy requires approval") {
		t.Fatalf("d: %s (%s), want awaiting approval required by policy", d.Status, d.Reason)
	}
	if len(res.Policy.Of(engine.DecisionWarn)) != 1 {
		t.Fatalf("decisions %+v, want the warning", res.Policy.Decisions)
	}
	for _, c := range []string{"a", "b", "c"} {
		if res.Component(c).Status != engine.Applied {
			t.Errorf("%s: %s, want applied (a warning stops nothing)", c, res.Component(c).Status)
		}
	}
}

func TestABrokenJudgeFailsTheRunClosed(t *testing.T) {
	h := newHarness(t)
	res, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester", Judge: failingJudge{}})
	if !errors.Is(err, engine.ErrPolicy) || res.Status != store.StatusFailed {
		t.Fatalf("apply with a failing judge: %v, %s; want a PolicyError, failed", err, res.Status)
	}
	if n := len(h.r.Calls("apply")); n != 0 {
		t.Fatalf("%d applies ran", n)
	}
}

type failingJudge struct{}

func (failingJudge) Judge(context.Context, *engine.EnvPlan) (*engine.Verdict, error) {
	return nil, errors.New("p.rego:3: boom")
}

// valuesRunner is the fake whose plan, asked for values, shows the input
// "parent" as its resource's After value, as OpenTofu would.
type valuesRunner struct{ *fake.Runner }

func (r valuesRunner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	p, err := r.Runner.Plan(ctx, c, in, opts)
	if err == nil && opts.Values {
		for i := range p.Resources {
			p.Resources[i].After = map[string]any{"parent": in["parent"]}
		}
	}
	return p, err
}

// A component judged first with an input known only after its producer
// applies is judged again, in its turn, by the plan that applies: a value
// the policy denies stops the run before that component applies.
func TestAPlanMadeAfterItsUpstreamAppliesIsJudgedAgain(t *testing.T) {
	h := newHarness(t)
	h.r.UnknownUntilApply = map[string]bool{"a": true}
	h.e.Runners["script"] = valuesRunner{h.r}
	ctx := context.Background()
	res, err := h.e.Apply(ctx, parse(t, diamond), engine.Options{Actor: "tester", AutoApprove: true, Judge: judge(t, `package knit

deny contains {"msg": "no a-1 parent", "component": c.name} if {
	some c in input.components
	some r in c.resources
	r.after.parent == "a-1"
}

warn contains "heads up" if true
`)})
	var denied *engine.PolicyDeniedError
	if !errors.As(err, &denied) || res.Status != store.StatusFailed {
		t.Fatalf("apply: %v (%v), want a PolicyDeniedError", err, res)
	}
	if len(h.r.Calls("apply")) != 1 {
		t.Fatalf("applies %+v, want a only", h.r.Calls("apply"))
	}
	for _, call := range h.r.Calls("apply") {
		if call.Component != "a" {
			t.Errorf("%s applied despite the denial", call.Component)
		}
	}
	wantCause(t, res, "b", engine.ReasonPolicyDenied.Cause())
	if !res.Policy.Denied() || len(res.Policy.Of(engine.DecisionWarn)) != 1 {
		t.Fatalf("decisions %+v, want the denial and the warning once", res.Policy.Decisions)
	}
	audit, _ := h.st.Audit(ctx, store.AuditFilter{})
	warns := 0
	for _, e := range audit {
		if e.Action == "policy-warn" {
			warns++
		}
	}
	if warns != 1 {
		t.Fatalf("%d policy-warn audit events, want 1 (an identical decision is not recorded twice)", warns)
	}
}

// A run the policies deny changes nothing, so ENV keeps meaning what was
// applied before: the denied spec is recorded as a revision (the run names
// it) but is not the applied one, for an apply and for a teardown alike.
func TestADeniedRunDoesNotMoveTheAppliedRevision(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.applied(t, diamond)
	before, err := h.st.Environment(ctx, "t/diamond")
	if err != nil || before.AppliedRevision == 0 {
		t.Fatalf("after the first apply: %+v, %v", before, err)
	}
	denyAll := judge(t, "package knit\n\ndeny contains \"frozen\" if true\n")
	changed := parse(t, strings.Replace(diamond, "{name: size, value: 3}", "{name: size, value: 4}", 1))
	for _, run := range []struct {
		name string
		do   func() (*engine.Result, error)
	}{
		{"apply", func() (*engine.Result, error) {
			return h.e.Apply(ctx, changed, engine.Options{Actor: "tester", AutoApprove: true, Judge: denyAll})
		}},
		{"teardown", func() (*engine.Result, error) {
			return h.e.Teardown(ctx, changed, engine.Options{Actor: "tester", AutoApprove: true, Judge: denyAll})
		}},
	} {
		res, err := run.do()
		var denied *engine.PolicyDeniedError
		if !errors.As(err, &denied) {
			t.Fatalf("%s: %v, want a PolicyDeniedError", run.name, err)
		}
		after, err := h.st.Environment(ctx, "t/diamond")
		if err != nil {
			t.Fatal(err)
		}
		if after.AppliedRevision != before.AppliedRevision {
			t.Errorf("%s denied: applied revision %d, want %d (still the one applied before)", run.name, after.AppliedRevision, before.AppliedRevision)
		}
		if res.Revision == before.AppliedRevision || after.Revision != res.Revision {
			t.Errorf("%s denied: run revision %d, latest %d: the denied spec is recorded as a new revision", run.name, res.Revision, after.Revision)
		}
	}
}

// The plan that applies is the plan the policies judged. A component
// judged first with every input known applies that very saved plan (it
// is not planned again); when the world moves between the judgement and
// its turn, the tool refuses the judged plan as stale, and the plan made
// instead is judged before it applies: here it re-creates b, which the
// policy denies, so b is not applied.
func TestTheInTurnPlanIsTheJudgedPlanOrIsJudgedAgain(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.applied(t, diamond)
	h.r.RefuseStale = true
	noRecreate := judge(t, `package knit

deny contains {"msg": "b holds data: never re-create it", "component": "b"} if {
	some c in input.components
	c.name == "b"
	c.changes.add > 0
}
`)
	// a and b change (update in place, which the policy allows).
	changed := parse(t, withChanges(4, 1))
	plans := len(h.r.Calls("plan"))
	res, err := h.e.Apply(ctx, changed, engine.Options{Actor: "tester", AutoApprove: true, Judge: noRecreate})
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v, %v", res, err)
	}
	if n := len(h.r.Calls("plan")) - plans; n != 2 {
		t.Errorf("%d plans, want 2 (a and b, each planned once: the judged plan is the one applied)", n)
	}

	// Now b's world moves (its resource vanishes) while a applies, after
	// the judgement: b's judged plan (an update) no longer applies, and the
	// plan made in its turn re-creates b.
	h.r.Hook = func(_ context.Context, op, comp string) error {
		if op == "apply" && comp == "a" {
			h.r.Drift("b")
		}
		return nil
	}
	again := parse(t, withChanges(5, 2))
	res, err = h.e.Apply(ctx, again, engine.Options{Actor: "tester", AutoApprove: true, Judge: noRecreate})
	var denied *engine.PolicyDeniedError
	if !errors.As(err, &denied) || res.Status != store.StatusFailed {
		t.Fatalf("apply: %v (%v), want a PolicyDeniedError for re-creating b", err, res)
	}
	if h.r.Applied("b") {
		t.Error("b was re-created despite the policy: the plan that applied was never judged")
	}
	wantCause(t, res, "b", engine.ReasonPolicyDenied.Cause())
}

// withChanges is diamond with a's size and a new variable of b's set.
func withChanges(size, extra int) string {
	return strings.NewReplacer("{name: size, value: 3}", fmt.Sprintf("{name: size, value: %d}", size),
		"variables: [{name: parent, valueFrom: a.id}]\n      outputs: [{name: url}]",
		fmt.Sprintf("variables: [{name: parent, valueFrom: a.id}, {name: extra, value: %d}]\n      outputs: [{name: url}]", extra)).Replace(diamond)
}
