package engine

import (
	"sync"
	"sync/atomic"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// TestGateDecidesWhatGoesOnWithoutAsking: the component's autoApprove,
// the run's, a drift policy, and above them all a policy's
// require_approval.
func TestGateDecidesWhatGoesOnWithoutAsking(t *testing.T) {
	env := parseEnv(t, pair)
	for _, tt := range []struct {
		name    string
		kind    store.RunKind
		opts    Options
		require string
		want    map[string]bool
	}{
		{"as the file says", KindApply, Options{}, "", map[string]bool{"db": false, "app": true}},
		{"the run's auto-approve", KindApply, Options{AutoApprove: true}, "", map[string]bool{"db": true, "app": true}},
		{"drift policies", KindDrift, Options{Policies: map[string]string{"db": spec.DriftReconcile, "app": spec.DriftApprove}}, "",
			map[string]bool{"db": true, "app": false}},
		{"require_approval over everything", KindApply, Options{AutoApprove: true}, "app", map[string]bool{"db": true, "app": false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := bare(env, tt.kind, tt.opts)
			if tt.require != "" {
				s.gate.require(tt.require, "policy.rego:1 gate: a person looks")
			}
			for name, want := range tt.want {
				c := env.Component(name)
				if got := s.gate.autoApproved(c); got != want {
					t.Errorf("autoApproved(%s) = %v, want %v", name, got, want)
				}
				if got := s.gate.approved(c, &runner.Plan{Add: 1}); got != want {
					t.Errorf("approved(%s) = %v, want %v (no terminal to ask)", name, got, want)
				}
			}
		})
	}
}

// TestGateAsksAtTheTerminalOneQuestionAtATime: plans of components in
// parallel are put to the person one after the other, and the answer is
// theirs.
func TestGateAsksAtTheTerminalOneQuestionAtATime(t *testing.T) {
	env := parseEnv(t, pair)
	var asking, most atomic.Int32
	s := bare(env, KindApply, Options{Confirm: func(component string, _ *runner.Plan) bool {
		n := asking.Add(1)
		defer asking.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return component == "db"
	}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !s.gate.approved(env.Component("db"), &runner.Plan{Add: 1}) {
				t.Error("the person said yes to db")
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d questions at once, want 1", most.Load())
	}
	s.gate.require("db", "policy")
	if s.gate.approved(env.Component("db"), &runner.Plan{Add: 1}) {
		t.Error("a plan a policy says a person approves was let through by a yes at the terminal")
	}
}

// TestGateRollbackReappliesWithoutAskingAndGatesItsDestroys: going back
// re-applies what was applied before at once; what the failed revision
// added is destroyed only as any destroy is.
func TestGateRollbackReappliesWithoutAskingAndGatesItsDestroys(t *testing.T) {
	env := parseEnv(t, pair)
	s := bare(env, KindRollback, Options{})
	s.removed.defs = map[string]*spec.Environment{"db": env}
	if s.gate.autoApproved(env.Component("db")) {
		t.Error("a rollback destroys a component the failed revision added without asking")
	}
	s.removed.defs = nil
	if !s.gate.autoApproved(env.Component("db")) {
		t.Error("a rollback asks before re-applying db")
	}
}
