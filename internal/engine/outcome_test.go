package engine_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// TestARunsOutcomeCommitsWhole: the store fails between the outcome's
// writes (a trigger in the real database refuses the environment's new
// status after the run's record and audit event were written in the same
// transaction, as a crash there would stop them). The run, its audit event
// and the environment's status still agree: the outcome is recorded
// failed, all three saying so.
func TestARunsOutcomeCommitsWhole(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	env := h.applied(t, chain4)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.dir, sqlite.DBFile)+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TRIGGER crash BEFORE UPDATE OF status ON environments
		WHEN NEW.status = '`+string(engine.EnvApplied)+`' BEGIN SELECT RAISE(ABORT, 'injected crash'); END`); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err == nil && res.Status == store.StatusSucceeded {
		t.Fatalf("the apply succeeded although its environment's status could not be written: %+v", res)
	}
	run, err := h.st.Run(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	e, err := h.st.Environment(ctx, env.ID())
	if err != nil {
		t.Fatal(err)
	}
	events, err := h.st.Audit(ctx, store.AuditFilter{Env: env.ID()})
	if err != nil {
		t.Fatal(err)
	}
	var audited []string
	for _, ev := range events {
		if ev.RunID == run.ID {
			audited = append(audited, ev.Detail)
		}
	}
	if run.Status != store.StatusFailed || e.Status != engine.EnvFailed || len(audited) != 1 || audited[0] != string(store.StatusFailed) {
		t.Fatalf("run recorded %s, environment %s, audit trail %q: they disagree", run.Status, e.Status, audited)
	}
}
