package engine

import (
	"errors"
	"testing"

	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// TestVerificationRolloutFollowsTheSpec: what a verification that did not
// succeed leads to, by the spec's rollout and the run's kind.
func TestVerificationRolloutFollowsTheSpec(t *testing.T) {
	failed := &VerificationError{Report: health.Report{Verdict: health.Failed}}
	unsure := &VerificationError{Report: health.Report{Verdict: health.Inconclusive}}
	for _, tt := range []struct {
		name      string
		onFailure string
		kind      store.RunKind
		err       error
		want      Rollout
	}{
		{"rollback asked for", spec.RollbackOnFailure, KindApply, failed, RolloutRollback},
		{"a rollback never rolls back", spec.RollbackOnFailure, KindRollback, failed, RolloutNone},
		{"nobody could tell", spec.RollbackOnFailure, KindApply, unsure, RolloutPaused},
		{"pause asked for", spec.PauseOnFailure, KindApply, failed, RolloutPaused},
		{"none asked for", "", KindApply, failed, RolloutNone},
		{"another failure", spec.RollbackOnFailure, KindApply, errors.New("store down"), RolloutNone},
		{"not an apply", spec.RollbackOnFailure, KindTeardown, failed, RolloutNone},
	} {
		env := parseEnv(t, pair)
		env.Spec.Rollout = &spec.Rollout{OnFailure: tt.onFailure}
		if got := bare(env, tt.kind, Options{}).verification.rollout(tt.err); got != tt.want {
			t.Errorf("%s: rollout %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestVerificationVerdictKeptWithTheRevision: an apply that succeeded is
// Successful, one whose checks failed keeps their verdict, a plan none.
func TestVerificationVerdictKeptWithTheRevision(t *testing.T) {
	env := parseEnv(t, pair)
	v := bare(env, KindApply, Options{}).verification
	if got := v.verdict(store.StatusSucceeded, nil); got != store.VerificationSuccessful {
		t.Errorf("succeeded: %q", got)
	}
	if got := v.verdict(store.StatusFailed, &VerificationError{Report: health.Report{Verdict: health.Failed}}); got != string(health.Failed) {
		t.Errorf("failed checks: %q", got)
	}
	if got := bare(env, KindPlan, Options{}).verification.verdict(store.StatusSucceeded, nil); got != "" {
		t.Errorf("a plan keeps %q", got)
	}
}

// TestVerificationCheckBlocksAreFailedChecks: a check block a tool
// reported failed in an apply is a check of its component, already
// decided failed; a destroyed component's are not checked.
func TestVerificationCheckBlocksAreFailedChecks(t *testing.T) {
	s := bare(parseEnv(t, pair), KindApply, Options{})
	s.e.DataDir = t.TempDir()
	s.verification.checkFailed("db")(runner.CheckFailure{Check: "reachable", Message: "no answer"})
	s.verification.checkFailed("app")(runner.CheckFailure{Check: "gone", Message: "x"})
	s.result.Components = []*ComponentResult{{Name: "db", Status: Applied}, {Name: "app", Status: Destroyed}}
	targets := s.verification.healthTargets()
	if len(targets) != 1 {
		t.Fatalf("targets %+v, want db's check block only", targets)
	}
	d := targets[0].Decided
	if targets[0].Component != "db" || d == nil || d.Verdict != health.Failed || d.Check != "check.reachable" || d.Message != "no answer" {
		t.Errorf("target %+v, decided %+v", targets[0], d)
	}
}
