package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

func testComponentRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateRun(ctx, run("r1", "team/web", at(0))))
	lockFor(t, s, "team/web", "r1")
	db := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply", Status: string(store.StatusRunning), StartedAt: at(time.Second)}
	app := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "app", Operation: "apply", Status: string(store.StatusRunning), StartedAt: at(2 * time.Second)}
	must(t, s.StartComponentRun(ctx, db))
	must(t, s.StartComponentRun(ctx, app))
	if db.ID == 0 || app.ID == 0 || db.ID == app.ID {
		t.Fatalf("component run IDs %d and %d: want distinct and non-zero", db.ID, app.ID)
	}

	// Finishing with a state records the run, the state and its outputs together.
	db.Status, db.Reason, db.Log, db.FinishedAt = string(store.StatusSucceeded), "created", "Apply complete!\n", at(time.Minute)
	db.PlanSummary = []byte(`{"add":1}`)
	state := &store.ComponentState{Env: "team/web", Component: "db", Status: "applied", Fingerprint: "fp1", Revision: 1,
		UpdatedAt: at(time.Minute), Outputs: map[string]store.OutputValue{
			"host": {Value: []byte(`"db.internal"`)},
			"port": {Value: []byte(`5432`)},
		}}
	must(t, s.FinishComponentRun(ctx, *db, state))
	app.Status, app.FinishedAt = string(store.StatusFailed), at(2*time.Minute)
	app.Cause = store.Cause{ReasonCode: "UpstreamAwaitingApproval", Upstream: []string{"db"}, ApprovalID: 7}
	must(t, s.FinishComponentRun(ctx, *app, nil))
	wantNotFound(t, s.FinishComponentRun(ctx, store.ComponentRun{ID: 999999, Status: string(store.StatusFailed)}, nil), "finish unknown component run")

	crs, err := s.ComponentRuns(ctx, "r1")
	must(t, err)
	if len(crs) != 2 {
		t.Fatalf("got %d component runs, want 2", len(crs))
	}
	equal(t, "first component run", crs[0].Status, string(store.StatusSucceeded))
	equal(t, "first component run plan", crs[0].PlanSummary, db.PlanSummary)
	equal(t, "first component run finish", crs[0].FinishedAt, at(time.Minute))
	equal(t, "second component run", crs[1].Status, string(store.StatusFailed))
	equal(t, "second component run's cause", crs[1].Cause, app.Cause)
	equal(t, "first component run's cause (none)", crs[0].Cause, store.Cause{})
	last, err := s.LastComponentRun(ctx, "team/web", "app")
	must(t, err)
	equal(t, "last component run's cause", last.Cause, app.Cause)
	latest, err := s.LatestComponentRuns(ctx, "team/web")
	must(t, err)
	equal(t, "latest component runs' causes", []store.Cause{latest[0].Cause, latest[1].Cause}, []store.Cause{app.Cause, {}})

	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	equal(t, "states after finishing db with a state and app without", states,
		map[string]store.ComponentState{"db": *state})

	// A later finish replaces the state and all its outputs.
	redo := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply", Status: string(store.StatusRunning)}
	must(t, s.StartComponentRun(ctx, redo))
	redo.Status = string(store.StatusSucceeded)
	state2 := &store.ComponentState{Status: "applied", Fingerprint: "fp2", Revision: 2, UpdatedAt: at(time.Hour),
		Outputs: map[string]store.OutputValue{"host": {Value: []byte(`"db2.internal"`)}}}
	must(t, s.FinishComponentRun(ctx, *redo, state2))
	states, err = s.ComponentStates(ctx, "team/web")
	must(t, err)
	got := states["db"]
	if got.Env != "team/web" || got.Component != "db" {
		t.Errorf("state Env/Component should default to the component run's, got %q/%q", got.Env, got.Component)
	}
	equal(t, "replaced outputs", got.Outputs, state2.Outputs)
	equal(t, "replaced fingerprint", got.Fingerprint, "fp2")

	// A component run that never ran a tool is recorded finished in one call.
	skipped := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "cache", Operation: "apply", Status: "up to date",
		Reason: "unchanged", Cause: store.Cause{ReasonCode: "KnownAfterApply", Upstream: []string{"db.host"}}, Log: "nothing ran\n", StartedAt: at(3 * time.Minute), FinishedAt: at(3 * time.Minute)}
	must(t, s.StartComponentRun(ctx, skipped))
	crs, err = s.ComponentRuns(ctx, "r1")
	must(t, err)
	equal(t, "component run recorded finished", crs[len(crs)-1], *skipped)

	// Several started at once are written together, in the order given,
	// each with its ID; one the store refuses writes none of them.
	checks := []*store.ComponentRun{
		{RunID: "r2", Env: "team/web", Component: "db", Operation: "drift", StartedAt: at(3 * time.Second)},
		{RunID: "r2", Env: "team/web", Component: "app", Operation: "drift", StartedAt: at(3 * time.Second)},
	}
	must(t, s.CreateRun(ctx, run("r2", "team/web", at(0))))
	lockFor(t, s, "team/web", "r2")
	if err := s.StartComponentRun(ctx, checks[0], &store.ComponentRun{RunID: "r2", Env: "team/web"}); err == nil {
		t.Error("StartComponentRun of a component run without a component: no error")
	}
	must(t, s.StartComponentRun(ctx, checks...))
	if checks[0].ID == 0 || checks[1].ID <= checks[0].ID || checks[1].Status != string(store.StatusRunning) {
		t.Errorf("component runs started together: IDs %d, %d, status %q", checks[0].ID, checks[1].ID, checks[1].Status)
	}
	started, err := s.ComponentRuns(ctx, "r2")
	must(t, err)
	if len(started) != 2 || started[0].Component != "db" || started[1].Component != "app" || started[1].Status != string(store.StatusRunning) {
		t.Errorf("component runs started together: %+v", started)
	}
}

func testLastComponentRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.LastComponentRun(ctx, "team/web", "db")
	wantNotFound(t, err, "last run of a component never run")
	for i, id := range []string{"r1", "r2"} {
		must(t, s.CreateRun(ctx, run(id, "team/web", at(time.Duration(i)*time.Hour))))
		lockFor(t, s, "team/web", id)
		cr := &store.ComponentRun{RunID: id, Env: "team/web", Component: "db", Operation: "apply", Status: string(store.StatusRunning),
			StartedAt: at(time.Duration(i) * time.Hour)}
		must(t, s.StartComponentRun(ctx, cr))
		cr.Status, cr.Log, cr.FinishedAt = string(store.StatusSucceeded), "log of "+id, at(time.Duration(i)*time.Hour+time.Minute)
		must(t, s.FinishComponentRun(ctx, *cr, nil))
	}
	last, err := s.LastComponentRun(ctx, "team/web", "db")
	must(t, err)
	if last.RunID != "r2" || last.Log != "log of r2" || last.Status != string(store.StatusSucceeded) {
		t.Errorf("last component run: run %s, status %s, log %q; want r2, succeeded, %q", last.RunID, last.Status, last.Log, "log of r2")
	}
	_, err = s.LastComponentRun(ctx, "team/api", "db")
	wantNotFound(t, err, "last run of the same component in another env")
}

func testComponentStates(t *testing.T, s store.Store) {
	ctx := t.Context()
	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	if len(states) != 0 {
		t.Errorf("new store has states %v", states)
	}
	web := store.ComponentState{Env: "team/web", Component: "db", Status: "applied", Fingerprint: "fp", Revision: 3,
		UpdatedAt: at(0), Outputs: map[string]store.OutputValue{"url": {Value: []byte(`"postgres://db"`)}}}
	api := store.ComponentState{Env: "team/api", Component: "db", Status: "failed", Revision: 1, UpdatedAt: at(time.Second)}
	must(t, s.PutComponentState(ctx, web))
	must(t, s.PutComponentState(ctx, api))
	states, err = s.ComponentStates(ctx, "team/web")
	must(t, err)
	equal(t, "states of team/web", states, map[string]store.ComponentState{"db": web})

	web.Status, web.Outputs = "destroyed", nil
	must(t, s.PutComponentState(ctx, web))
	states, err = s.ComponentStates(ctx, "team/web")
	must(t, err)
	if got := states["db"]; got.Status != "destroyed" || len(got.Outputs) != 0 {
		t.Errorf("after replacing with no outputs: status %q, outputs %v", got.Status, got.Outputs)
	}
	states, err = s.ComponentStates(ctx, "team/api")
	must(t, err)
	equal(t, "states of team/api", states, map[string]store.ComponentState{"db": api})
}

func testSensitiveOutputs(t *testing.T, s store.Store) {
	ctx := t.Context()
	outputs := map[string]store.OutputValue{
		"password": {Value: []byte(`"hunter2-sensitive"`), Sensitive: true},
		"config":   {Value: []byte(`{"user":"app","tls":true}`), Sensitive: true},
		"host":     {Value: []byte(`"db.internal"`)},
	}
	must(t, s.PutComponentState(ctx, store.ComponentState{Env: "team/web", Component: "db", Status: "applied", Outputs: outputs}))
	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	equal(t, "outputs read back", states["db"].Outputs, outputs)
}
