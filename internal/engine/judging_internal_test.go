package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// verdictJudge is a Judge that gives one verdict (or error) and keeps what
// it was asked to judge.
type verdictJudge struct {
	v    *Verdict
	err  error
	seen []*EnvPlan
}

func (f *verdictJudge) Judge(_ context.Context, p *EnvPlan) (*Verdict, error) {
	f.seen = append(f.seen, p)
	return f.v, f.err
}

func decision(kind, component string) Decision {
	return Decision{Kind: kind, Component: component, Message: kind + " it", File: "p.rego", Line: 1, Rule: kind}
}

// judgedPair is the plan of pair with db changing and app not.
func judgedPair(s *session) []PlannedComponent {
	return []PlannedComponent{
		{Name: "db", Def: s.env.Component("db"), Plan: &runner.Plan{Add: 1}},
		{Name: "app", Def: s.env.Component("app"), Plan: &runner.Plan{}},
	}
}

// TestJudgingDenyStopsTheRunBeforeAnythingApplies: every component is
// skipped, the denied one saying by which rule, and the decision is
// audited; the Judge saw the run.
func TestJudgingDenyStopsTheRunBeforeAnythingApplies(t *testing.T) {
	e, _ := testEngine(t)
	j := &verdictJudge{v: &Verdict{Decisions: []Decision{decision(DecisionDeny, "db")}}}
	s := began(t, e, parseEnv(t, pair), KindApply, Options{Actor: "tester", Judge: j})
	err := s.judging.judge(context.Background(), judgedPair(s))
	var denied *PolicyDeniedError
	if !errors.As(err, &denied) || len(denied.Denials) != 1 {
		t.Fatalf("judge: %v, want denied by one rule", err)
	}
	if len(j.seen) != 1 || j.seen[0].Run.ID != s.run.ID || j.seen[0].Run.Actor != "tester" {
		t.Errorf("the Judge saw %+v", j.seen)
	}
	for _, name := range []string{"db", "app"} {
		cr := s.result.Component(name)
		if cr == nil || cr.Status != Skipped || cr.ReasonCode != string(ReasonPolicyDenied) {
			t.Errorf("%s: %+v, want skipped for the policy", name, cr)
		}
	}
	if why := s.result.Component("db").Reason; !strings.HasPrefix(why, "denied by policy: ") {
		t.Errorf("db's reason %q does not name the rule", why)
	}
	audit, err := e.Store.Audit(context.Background(), store.AuditFilter{Env: s.env.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if !hasAction(audit, "policy-deny") {
		t.Errorf("audit %+v has no policy-deny", audit)
	}
}

func hasAction(events []store.AuditEvent, action string) bool {
	for _, a := range events {
		if a.Action == action {
			return true
		}
	}
	return false
}

// TestJudgingOverrideLetsADeniedRunGoOn: the denial is kept, overridden,
// and audited as such.
func TestJudgingOverrideLetsADeniedRunGoOn(t *testing.T) {
	e, _ := testEngine(t)
	j := &verdictJudge{v: &Verdict{Decisions: []Decision{decision(DecisionDeny, "db")}}}
	s := began(t, e, parseEnv(t, pair), KindApply, Options{Judge: j, OverridePolicy: "incident 7"})
	if err := s.judging.judge(context.Background(), judgedPair(s)); err != nil {
		t.Fatalf("judge: %v, want the run to go on", err)
	}
	if s.result.Policy == nil || s.result.Policy.Overridden != "incident 7" || s.result.Policy.Denied() {
		t.Errorf("verdict %+v, want the denial overridden", s.result.Policy)
	}
}

// TestJudgingRequireApprovalGoesToTheGate: a rule naming no component
// gates every component whose plan changes something, and only those.
func TestJudgingRequireApprovalGoesToTheGate(t *testing.T) {
	e, _ := testEngine(t)
	j := &verdictJudge{v: &Verdict{Decisions: []Decision{decision(DecisionRequireApproval, "")}}}
	s := began(t, e, parseEnv(t, pair), KindApply, Options{Judge: j, AutoApprove: true})
	if err := s.judging.judge(context.Background(), judgedPair(s)); err != nil {
		t.Fatal(err)
	}
	if s.gate.requiredByPolicy("db") == "" || s.gate.autoApproved(s.env.Component("db")) {
		t.Error("db's change goes on without the approval a policy requires")
	}
	if s.gate.requiredByPolicy("app") != "" {
		t.Error("app, which changes nothing, is gated")
	}
}

// TestJudgingFailsClosed: a Judge that cannot judge fails the run with a
// PolicyError.
func TestJudgingFailsClosed(t *testing.T) {
	e, _ := testEngine(t)
	j := &verdictJudge{err: errors.New("rego: parse error")}
	s := began(t, e, parseEnv(t, pair), KindApply, Options{Judge: j})
	if err := s.judging.judge(context.Background(), judgedPair(s)); !errors.Is(err, ErrPolicy) {
		t.Fatalf("judge: %v, want a policy error", err)
	}
}

// TestJudgingJudgedPlanIsUsedOnceAndOnlyFromItsInputs: the saved plan
// judged first applies when the turn has the inputs it was made from;
// otherwise the turn's plan must be judged again.
func TestJudgingJudgedPlanIsUsedOnceAndOnlyFromItsInputs(t *testing.T) {
	s := bare(parseEnv(t, pair), KindApply, Options{})
	j := s.judging
	if plan, judged := j.judgedPlan("db", "fp"); plan != nil || judged {
		t.Fatalf("a run not judged first: %v, %v", plan, judged)
	}
	want := &runner.Plan{Add: 1, File: "plan.tfplan"}
	j.usable = map[string]judgedPlan{"db": {plan: want, fp: "fp"}, "app": {plan: want, fp: "fp"}}
	if plan, judged := j.judgedPlan("db", "fp"); plan != want || !judged {
		t.Errorf("db from the judged inputs: %v, %v", plan, judged)
	}
	if plan, judged := j.judgedPlan("db", "fp"); plan != nil || !judged {
		t.Errorf("db a second time: %v, %v: want judged again", plan, judged)
	}
	if plan, judged := j.judgedPlan("app", "other"); plan != nil || !judged {
		t.Errorf("app from other inputs: %v, %v: want judged again", plan, judged)
	}
}
