package knit_test

import (
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// TestResumeKind is the one rule both queues follow (queuetest runs it
// against each): every run kind, what resumes it.
func TestResumeKind(t *testing.T) {
	want := map[store.RunKind]store.RunKind{
		engine.KindApply:    engine.KindApply,
		engine.KindTeardown: engine.KindTeardown,
		engine.KindDrift:    engine.KindDrift,
		engine.KindRollback: engine.KindRollback,
		engine.KindPlan:     "",
	}
	for _, k := range store.RunKinds() {
		as, ok := knit.ResumeKind(view.Run{Kind: k, Revision: 3})
		if w, listed := want[k]; !listed {
			t.Errorf("run kind %s: the resume rule does not say what resumes it (add it here)", k)
		} else if as != w || ok != (w != "") {
			t.Errorf("ResumeKind(%s) = %q %v, want %q", k, as, ok, w)
		}
	}
	// A rollback resumes as a rollback to the revision it recorded, not as
	// an apply of the applied (maybe still the bad) one.
	req, ok := knit.ResumeRequest(view.Run{ID: "r1", Env: "ops/web", Kind: engine.KindRollback, Revision: 3}, "knit-serve", "why")
	if !ok || req.Kind != engine.KindRollback || req.To != 3 || req.Resumes != "r1" || req.EnvRef != "ops/web" ||
		req.Source != knit.SourceRecovery || req.Actor != "knit-serve" {
		t.Errorf("ResumeRequest of a rollback: %+v %v", req, ok)
	}
	// Known only by its kind (no record names its revision): an apply of
	// the applied revision.
	if as, ok := knit.ResumeKind(view.Run{Kind: engine.KindRollback}); !ok || as != engine.KindApply {
		t.Errorf("ResumeKind(rollback without a revision) = %q %v, want apply", as, ok)
	}
}
