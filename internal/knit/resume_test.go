package knit_test

import (
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// TestResumeKind is the one rule both queues follow (queuetest runs it
// against each): every run kind, what resumes it.
func TestResumeKind(t *testing.T) {
	want := map[store.RunKind]store.RunKind{
		engine.KindApply:    engine.KindApply,
		engine.KindTeardown: engine.KindTeardown,
		engine.KindDrift:    engine.KindDrift,
		engine.KindRollback: engine.KindApply,
		engine.KindPlan:     "",
	}
	for _, k := range store.RunKinds() {
		as, ok := knit.ResumeKind(k)
		if w, listed := want[k]; !listed {
			t.Errorf("run kind %s: the resume rule does not say what resumes it (add it here)", k)
		} else if as != w || ok != (w != "") {
			t.Errorf("ResumeKind(%s) = %q %v, want %q", k, as, ok, w)
		}
	}
	req, ok := knit.ResumeRequest("ops/web", engine.KindRollback, "knit-serve", "why")
	if !ok || req.Kind != engine.KindApply || req.EnvRef != "ops/web" || req.Source != knit.SourceRecovery || req.Actor != "knit-serve" {
		t.Errorf("ResumeRequest of a rollback: %+v %v", req, ok)
	}
}
