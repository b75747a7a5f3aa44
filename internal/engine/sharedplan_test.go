package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// planRecorder is a runner that notes the plan file each apply is given.
type planRecorder struct {
	runner.Runner
	files []string
}

func (r *planRecorder) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	r.files = append(r.files, p.File)
	return r.Runner.Apply(ctx, c, p)
}

// TestAnApprovedPlanIsAppliedFromTheStore: a plan made and approved
// through one knit (data dir A) is applied by another on the same store
// (data dir B) byte for byte, though no file of A is reachable: its
// approvals folder and work dirs are gone. The bytes come from the store.
func TestAnApprovedPlanIsAppliedFromTheStore(t *testing.T) {
	h := newHarness(t)
	env := parse(t, `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: dev}
spec:
  teamName: team
  envName: dev
  components:
    - name: a
      type: script
      script: {apply: "true"}
`)
	ctx := context.Background()
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Awaiting})
	a, err := h.e.Decide(ctx, env, "a", true, "alice", "ok")
	if err != nil {
		t.Fatal(err)
	}
	// Replica A's disk is gone: its kept plan and its work dirs.
	for _, d := range []string{"approvals", "work"} {
		if err := os.RemoveAll(filepath.Join(h.dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	rec := &planRecorder{Runner: h.r}
	other := t.TempDir()
	b := &engine.Engine{Store: h.st, Runners: map[string]runner.Runner{"script": rec}, DataDir: other, Host: "replica-b", PID: os.Getpid()}
	res, err = b.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied})
	if len(rec.files) != 1 || !strings.HasPrefix(rec.files[0], other) {
		t.Fatalf("applied plan files %q, want one in B's data dir %s", rec.files, other)
	}
	if got, _ := h.st.Approval(ctx, a.ID); got.Status != store.ApprovalApplied {
		t.Errorf("approval #%d is %s, want applied", a.ID, got.Status)
	}
	// Applied: the store drops the plan's bytes.
	if _, err := h.st.SavedPlan(ctx, a.ID); err == nil {
		t.Errorf("the applied plan is still kept in the store")
	}
}
