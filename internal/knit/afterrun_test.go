package knit_test

import (
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/store"
)

// TestAfterDecidesWhatFollowsEveryRun: the library's one rule of what
// follows a run, whatever door started it: the rollback of a failed
// rollout, a person's rollback moving its pipeline stage (neither a
// rollout's own nor a resume's), and what people hear.
func TestAfterDecidesWhatFollowsEveryRun(t *testing.T) {
	failedCheck := &health.Report{Verdict: health.Failed}
	cases := []struct {
		name     string
		req      knit.RunRequest
		res      *engine.Result
		rollback bool
		stage    bool
		notices  []notify.Kind
		says     string
	}{
		{name: "never started", req: knit.RunRequest{Kind: engine.KindApply}},
		{name: "apply succeeded", req: knit.RunRequest{Kind: engine.KindApply, Source: "api"},
			res:     &engine.Result{Env: "qa/web", Kind: engine.KindApply, Status: store.StatusSucceeded},
			notices: []notify.Kind{notify.KindRunSucceeded}, says: "apply of qa/web succeeded"},
		{name: "verification failed, onFailure rollback", req: knit.RunRequest{Kind: engine.KindApply, Source: "git"},
			res: &engine.Result{Env: "qa/web", RunID: "r1", Kind: engine.KindApply, Revision: 3, Status: store.StatusFailed,
				Verification: failedCheck, Rollout: engine.RolloutRollback},
			rollback: true, notices: []notify.Kind{notify.KindRolloutFailed}, says: "rolling back to the last good revision"},
		{name: "verification failed, onFailure pause", req: knit.RunRequest{Kind: engine.KindApply, Source: "cli"},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindApply, Status: store.StatusFailed,
				Verification: failedCheck, Rollout: engine.RolloutPaused},
			notices: []notify.Kind{notify.KindRolloutFailed}, says: "paused"},
		{name: "a person's rollback", req: knit.RunRequest{Kind: engine.KindRollback, Source: "cli", Reason: "bad deploy"},
			res:   &engine.Result{Env: "qa/web", Kind: engine.KindRollback, Revision: 2, Status: store.StatusSucceeded},
			stage: true, notices: []notify.Kind{notify.KindRollbackDone}, says: "bad deploy"},
		{name: "a rollout's own rollback", req: knit.RunRequest{Kind: engine.KindRollback, Source: knit.SourceRollout},
			res:     &engine.Result{Env: "qa/web", Kind: engine.KindRollback, Status: store.StatusSucceeded},
			notices: []notify.Kind{notify.KindRollbackDone}},
		{name: "a resumed rollback", req: knit.RunRequest{Kind: engine.KindRollback, Source: knit.SourceRecovery},
			res:     &engine.Result{Env: "qa/web", Kind: engine.KindRollback, Status: store.StatusSucceeded},
			notices: []notify.Kind{notify.KindRollbackDone}},
		{name: "drift found", req: knit.RunRequest{Kind: engine.KindDrift, Source: "schedule"},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindDrift, Status: store.StatusSucceeded,
				Components: []*engine.ComponentResult{{Name: "db", Drift: engine.Drifted}, {Name: "app"}}},
			notices: []notify.Kind{notify.KindDriftFound}, says: "drift in qa/web: db"},
		{name: "drift found again", req: knit.RunRequest{Kind: engine.KindDrift, Source: "schedule"},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindDrift, Status: store.StatusSucceeded, Before: store.EnvDrifted,
				Components: []*engine.ComponentResult{{Name: "db", Drift: engine.Drifted}}}},
		{name: "in sync again", req: knit.RunRequest{Kind: engine.KindDrift, Source: "schedule"},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindDrift, Status: store.StatusSucceeded, Before: store.EnvDrifted,
				Components: []*engine.ComponentResult{{Name: "db"}}},
			notices: []notify.Kind{notify.KindDriftResolved}, says: "qa/web is in sync again"},
		{name: "in sync as before", req: knit.RunRequest{Kind: engine.KindDrift, Source: "schedule"},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindDrift, Status: store.StatusSucceeded, Before: store.EnvApplied,
				Components: []*engine.ComponentResult{{Name: "db"}}}},
		{name: "drift check failed", req: knit.RunRequest{Kind: engine.KindDrift, Source: "schedule"},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindDrift, Status: store.StatusFailed, Before: store.EnvDrifted,
				Components: []*engine.ComponentResult{{Name: "db", Status: engine.Failed, Reason: "no credentials"}}},
			notices: []notify.Kind{notify.KindRunFailed}, says: "drift of qa/web failed: db: no credentials"},
		{name: "waits for approval", req: knit.RunRequest{Kind: engine.KindApply},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindApply, Status: store.StatusSucceeded,
				Components: []*engine.ComponentResult{{Name: "db", Status: engine.Awaiting, Reason: "a destroy"}}},
			notices: []notify.Kind{notify.KindApprovalNeeded, notify.KindRunSucceeded}, says: "db in qa/web waits for approval: a destroy"},
		{name: "failed", req: knit.RunRequest{Kind: engine.KindApply},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindApply, Status: store.StatusFailed,
				Components: []*engine.ComponentResult{{Name: "db", Status: engine.Failed, Reason: "Error: boom\nmore"}}},
			notices: []notify.Kind{notify.KindRunFailed}, says: "apply of qa/web failed: db: Error: boom"},
		{name: "teardown refused", req: knit.RunRequest{Kind: engine.KindTeardown},
			res: &engine.Result{Env: "qa/web", Kind: engine.KindTeardown, Status: store.StatusFailed,
				Components: []*engine.ComponentResult{{Name: "app", Status: engine.Skipped}, {Name: "database", Status: engine.Refused, Reason: "destroyProtection: true\nset it false first"}}},
			notices: []notify.Kind{notify.KindRunFailed}, says: "teardown of qa/web failed: database refused: destroyProtection: true"},
		{name: "torn down", req: knit.RunRequest{Kind: engine.KindTeardown},
			res:     &engine.Result{Env: "qa/web", Kind: engine.KindTeardown, Status: store.StatusSucceeded},
			notices: []notify.Kind{notify.KindTeardownDone}, says: "qa/web is torn down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := knit.After(c.req, c.res, "knit-serve")
			if got := a.Rollback != nil; got != c.rollback {
				t.Fatalf("rollback: %+v, want one: %v", a.Rollback, c.rollback)
			}
			if r := a.Rollback; r != nil && (r.Kind != engine.KindRollback || r.EnvRef != "qa/web" || r.Source != knit.SourceRollout ||
				r.Actor != "knit-serve" || !strings.Contains(r.Reason, "revision 3 failed verification (run r1)")) {
				t.Errorf("rollback request: %+v", r)
			}
			if a.StageRollback != c.stage {
				t.Errorf("stage rollback: %v, want %v", a.StageRollback, c.stage)
			}
			var kinds []notify.Kind
			var all string
			for _, n := range a.Notices {
				kinds = append(kinds, n.Kind)
				all += n.Summary + "\n"
			}
			if !slices.Equal(kinds, c.notices) {
				t.Errorf("notices %v, want %v", kinds, c.notices)
			}
			if !strings.Contains(all, c.says) {
				t.Errorf("notices say %q, want %q in them", all, c.says)
			}
		})
	}
}
