// Package storetest is the conformance suite every store.Store
// implementation must pass: Run(t, open) checks each method's contract
// against fresh stores made by open.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// Run runs the conformance suite, one subtest per area, each on a fresh
// store from open. open should register the store's cleanup with t.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Revisions", testRevisions},
		{"Environments", testEnvironments},
		{"Runs", testRuns},
		{"InterruptRuns", testInterruptRuns},
		{"ComponentRuns", testComponentRuns},
		{"LastComponentRun", testLastComponentRun},
		{"ComponentStates", testComponentStates},
		{"SensitiveOutputs", testSensitiveOutputs},
		{"Locks", testLocks},
		{"LockTakeover", testLockTakeover},
		{"Audit", testAudit},
		{"ConcurrentWrites", testConcurrentWrites},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

// t0 has nanoseconds so the suite notices a store that rounds times.
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)

// at is t0+d. Records are compared whole (reflect.DeepEqual), so a store
// must return times as the UTC instants it was given.
func at(d time.Duration) time.Time { return t0.Add(d) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantNotFound(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: err = %v, want store.ErrNotFound", what, err)
	}
}

func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func env(id string) store.Environment {
	return store.Environment{ID: id, Team: "team", Name: id, Metadata: "meta-" + id}
}

func rev(spec string, created time.Time) store.Revision {
	return store.Revision{Hash: "h-" + spec, Source: "envs/" + spec + ".yaml", Spec: []byte(`{"spec":"` + spec + `"}`), CreatedAt: created}
}

func testRevisions(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.Revision(ctx, "team/web", 0)
	wantNotFound(t, err, "latest revision of unknown env")
	_, err = s.Environment(ctx, "team/web")
	wantNotFound(t, err, "unknown environment")

	r1, err := s.PutRevision(ctx, env("team/web"), rev("a", at(0)))
	must(t, err)
	want1 := store.Revision{Env: "team/web", Number: 1, Hash: "h-a", Source: "envs/a.yaml", Spec: []byte(`{"spec":"a"}`), CreatedAt: at(0)}
	equal(t, "first revision", r1, want1)
	e, err := s.Environment(ctx, "team/web")
	must(t, err)
	equal(t, "created environment", e, store.Environment{ID: "team/web", Team: "team", Name: "team/web", Metadata: "meta-team/web",
		Revision: 1, CreatedAt: at(0), UpdatedAt: at(0)})

	again, err := s.PutRevision(ctx, env("team/web"), rev("a", at(time.Hour)))
	must(t, err)
	equal(t, "same hash returns the latest revision unchanged", again, want1)

	// A time in another zone comes back as the same instant.
	cet := at(2 * time.Hour).In(time.FixedZone("CET", 3600))
	r2, err := s.PutRevision(ctx, env("team/web"), rev("b", cet))
	must(t, err)
	if r2.Number != 2 || r2.Hash != "h-b" {
		t.Errorf("new hash: got revision %d %s, want 2 h-b", r2.Number, r2.Hash)
	}
	if !r2.CreatedAt.Equal(cet) {
		t.Errorf("revision 2 created at %v, want %v", r2.CreatedAt, cet)
	}
	r2.CreatedAt = at(2 * time.Hour)
	e, err = s.Environment(ctx, "team/web")
	must(t, err)
	if e.Revision != 2 || !e.CreatedAt.Equal(at(0)) || !e.UpdatedAt.Equal(at(2*time.Hour)) {
		t.Errorf("environment after revision 2: %+v", e)
	}

	latest, err := s.Revision(ctx, "team/web", 0)
	must(t, err)
	equal(t, "Revision(env, 0)", latest, r2)
	first, err := s.Revision(ctx, "team/web", 1)
	must(t, err)
	equal(t, "Revision(env, 1)", first, want1)
	_, err = s.Revision(ctx, "team/web", 3)
	wantNotFound(t, err, "revision 3")

	// Going back to an earlier spec is a change from the latest: a new revision.
	r3, err := s.PutRevision(ctx, env("team/web"), rev("a", at(3*time.Hour)))
	must(t, err)
	if r3.Number != 3 {
		t.Errorf("reverting to spec a: got revision %d, want 3", r3.Number)
	}
}

func testEnvironments(t *testing.T, s store.Store) {
	ctx := t.Context()
	envs, err := s.Environments(ctx)
	must(t, err)
	if len(envs) != 0 {
		t.Errorf("new store lists %d environments", len(envs))
	}
	for _, id := range []string{"team/b", "team/a"} {
		_, err := s.PutRevision(ctx, env(id), rev(id, at(0)))
		must(t, err)
	}
	must(t, s.SetEnvironmentStatus(ctx, "team/a", "provisioned"))
	wantNotFound(t, s.SetEnvironmentStatus(ctx, "team/missing", "failed"), "status of unknown environment")

	envs, err = s.Environments(ctx)
	must(t, err)
	slices.SortFunc(envs, func(a, b store.Environment) int { return compare(a.ID, b.ID) })
	var ids, statuses []string
	for _, e := range envs {
		ids, statuses = append(ids, e.ID), append(statuses, e.Status)
	}
	equal(t, "environment IDs", ids, []string{"team/a", "team/b"})
	equal(t, "environment statuses", statuses, []string{"provisioned", ""})
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func run(id, env string, started time.Time) store.Run {
	return store.Run{ID: id, Env: env, Kind: "apply", Revision: 1, Status: store.StatusRunning,
		Actor: "alice", Reason: "ticket-1", PID: 4242, StartedAt: started}
}

func testRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"r1", "r2", "r3"} {
		must(t, s.CreateRun(ctx, run(id, "team/web", at(time.Duration(i)*time.Minute))))
	}
	must(t, s.CreateRun(ctx, run("other", "team/api", at(time.Hour))))
	if err := s.CreateRun(ctx, run("r1", "team/web", at(0))); err == nil {
		t.Error("creating a run with an existing ID succeeded")
	}

	got, err := s.Run(ctx, "r2")
	must(t, err)
	equal(t, "Run(r2)", got, run("r2", "team/web", at(time.Minute)))
	_, err = s.Run(ctx, "nope")
	wantNotFound(t, err, "unknown run")

	must(t, s.FinishRun(ctx, "r2", store.StatusFailed, "boom", at(90*time.Second)))
	wantNotFound(t, s.FinishRun(ctx, "nope", store.StatusFailed, "", at(0)), "finish unknown run")
	got, err = s.Run(ctx, "r2")
	must(t, err)
	want := run("r2", "team/web", at(time.Minute))
	want.Status, want.Error, want.FinishedAt = store.StatusFailed, "boom", at(90*time.Second)
	equal(t, "finished run", got, want)

	runs, err := s.Runs(ctx, "team/web", 0)
	must(t, err)
	equal(t, "runs newest first", runIDs(runs), []string{"r3", "r2", "r1"})
	runs, err = s.Runs(ctx, "team/web", 2)
	must(t, err)
	equal(t, "runs with limit 2", runIDs(runs), []string{"r3", "r2"})
	runs, err = s.Runs(ctx, "team/none", 0)
	must(t, err)
	if len(runs) != 0 {
		t.Errorf("runs of an unknown env: %v", runIDs(runs))
	}
}

func runIDs(runs []store.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func testInterruptRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	dead := run("dead", "team/web", at(0))
	dead.PID = 100
	live := run("live", "team/web", at(time.Second))
	live.PID = 200
	done := run("done", "team/web", at(2*time.Second))
	done.PID, done.Status = 100, store.StatusSucceeded
	elsewhere := run("elsewhere", "team/api", at(0))
	elsewhere.PID = 100
	for _, r := range []store.Run{dead, live, done, elsewhere} {
		must(t, s.CreateRun(ctx, r))
	}
	running := &store.ComponentRun{RunID: "dead", Env: "team/web", Component: "db", Operation: "apply", Status: store.StatusRunning, StartedAt: at(0)}
	finished := &store.ComponentRun{RunID: "dead", Env: "team/web", Component: "net", Operation: "apply", Status: store.StatusRunning, StartedAt: at(0)}
	must(t, s.StartComponentRun(ctx, running))
	must(t, s.StartComponentRun(ctx, finished))
	finished.Status, finished.FinishedAt = store.StatusSucceeded, at(time.Second)
	must(t, s.FinishComponentRun(ctx, *finished, nil))

	alive := func(pid int) bool { return pid == 200 }
	ids, err := s.InterruptRuns(ctx, "team/web", alive, at(time.Minute))
	must(t, err)
	equal(t, "interrupted runs", ids, []string{"dead"})

	for id, status := range map[string]string{"dead": store.StatusInterrupted, "live": store.StatusRunning,
		"done": store.StatusSucceeded, "elsewhere": store.StatusRunning} {
		r, err := s.Run(ctx, id)
		must(t, err)
		if r.Status != status {
			t.Errorf("run %s: status %q, want %q", id, r.Status, status)
		}
	}
	r, err := s.Run(ctx, "dead")
	must(t, err)
	if !r.FinishedAt.Equal(at(time.Minute)) {
		t.Errorf("interrupted run finished at %v, want %v", r.FinishedAt, at(time.Minute))
	}
	crs, err := s.ComponentRuns(ctx, "dead")
	must(t, err)
	statuses := map[string]string{}
	for _, cr := range crs {
		statuses[cr.Component] = cr.Status
	}
	equal(t, "component runs of the interrupted run", statuses, map[string]string{"db": store.StatusInterrupted, "net": store.StatusSucceeded})

	ids, err = s.InterruptRuns(ctx, "team/web", alive, at(2*time.Minute))
	must(t, err)
	if len(ids) != 0 {
		t.Errorf("second InterruptRuns interrupted %v again", ids)
	}
}

func testComponentRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateRun(ctx, run("r1", "team/web", at(0))))
	db := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply", Status: store.StatusRunning, StartedAt: at(time.Second)}
	app := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "app", Operation: "apply", Status: store.StatusRunning, StartedAt: at(2 * time.Second)}
	must(t, s.StartComponentRun(ctx, db))
	must(t, s.StartComponentRun(ctx, app))
	if db.ID == 0 || app.ID == 0 || db.ID == app.ID {
		t.Fatalf("component run IDs %d and %d: want distinct and non-zero", db.ID, app.ID)
	}

	// Finishing with a state records the run, the state and its outputs together.
	db.Status, db.Reason, db.Log, db.FinishedAt = store.StatusSucceeded, "created", "Apply complete!\n", at(time.Minute)
	db.PlanSummary = []byte(`{"add":1}`)
	state := &store.ComponentState{Env: "team/web", Component: "db", Status: "applied", Fingerprint: "fp1", Revision: 1,
		UpdatedAt: at(time.Minute), Outputs: map[string]store.OutputValue{
			"host": {Value: []byte(`"db.internal"`)},
			"port": {Value: []byte(`5432`)},
		}}
	must(t, s.FinishComponentRun(ctx, *db, state))
	app.Status, app.FinishedAt = store.StatusFailed, at(2*time.Minute)
	must(t, s.FinishComponentRun(ctx, *app, nil))
	wantNotFound(t, s.FinishComponentRun(ctx, store.ComponentRun{ID: 999999, Status: store.StatusFailed}, nil), "finish unknown component run")

	crs, err := s.ComponentRuns(ctx, "r1")
	must(t, err)
	if len(crs) != 2 {
		t.Fatalf("got %d component runs, want 2", len(crs))
	}
	equal(t, "first component run", crs[0].Status, store.StatusSucceeded)
	equal(t, "first component run plan", crs[0].PlanSummary, db.PlanSummary)
	equal(t, "first component run finish", crs[0].FinishedAt, at(time.Minute))
	equal(t, "second component run", crs[1].Status, store.StatusFailed)

	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	equal(t, "states after finishing db with a state and app without", states,
		map[string]store.ComponentState{"db": *state})

	// A later finish replaces the state and all its outputs.
	redo := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply", Status: store.StatusRunning}
	must(t, s.StartComponentRun(ctx, redo))
	redo.Status = store.StatusSucceeded
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
}

func testLastComponentRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.LastComponentRun(ctx, "team/web", "db")
	wantNotFound(t, err, "last run of a component never run")
	for i, id := range []string{"r1", "r2"} {
		must(t, s.CreateRun(ctx, run(id, "team/web", at(time.Duration(i)*time.Hour))))
		cr := &store.ComponentRun{RunID: id, Env: "team/web", Component: "db", Operation: "apply", Status: store.StatusRunning,
			StartedAt: at(time.Duration(i) * time.Hour)}
		must(t, s.StartComponentRun(ctx, cr))
		cr.Status, cr.Log, cr.FinishedAt = store.StatusSucceeded, "log of "+id, at(time.Duration(i)*time.Hour+time.Minute)
		must(t, s.FinishComponentRun(ctx, *cr, nil))
	}
	last, err := s.LastComponentRun(ctx, "team/web", "db")
	must(t, err)
	if last.RunID != "r2" || last.Log != "log of r2" || last.Status != store.StatusSucceeded {
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

func lease(env, runID string, acquired time.Time) store.Lock {
	return store.Lock{Env: env, RunID: runID, Owner: "alice", PID: 7, Host: "laptop", Acquired: acquired, Expires: acquired.Add(time.Minute)}
}

func wantLocked(t *testing.T, err error, holder string) {
	t.Helper()
	var le *store.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want *store.LockedError", err)
	}
	if le.Holder.RunID != holder {
		t.Errorf("LockedError names holder %q, want %q", le.Holder.RunID, holder)
	}
}

func testLocks(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := lease("team/web", "run-a", at(0))
	must(t, s.AcquireLock(ctx, a, at(0), nil))

	// The same run renews by acquiring again.
	a2 := a
	a2.Expires = at(5 * time.Minute)
	must(t, s.AcquireLock(ctx, a2, at(30*time.Second), nil))

	// Another run is refused, with the holder named, while the lease lives.
	err := s.AcquireLock(ctx, lease("team/web", "run-b", at(2*time.Minute)), at(2*time.Minute), func(store.Lock) bool { return false })
	wantLocked(t, err, "run-a")
	var le *store.LockedError
	if errors.As(err, &le) && (le.Env != "team/web" || le.Holder.Host != "laptop" || le.Holder.PID != 7 || !le.Holder.Expires.Equal(at(5*time.Minute))) {
		t.Errorf("LockedError: %+v", le)
	}
	// Locks are per environment.
	must(t, s.AcquireLock(ctx, lease("team/api", "run-b", at(0)), at(0), nil))

	// Release by a run that does not hold the lock does nothing.
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(time.Minute)), at(time.Minute), nil), "run-a")

	// RenewLock extends only the holder's lease.
	if err := s.RenewLock(ctx, "team/web", "run-c", at(time.Hour)); err == nil {
		t.Error("RenewLock by a run not holding the lock succeeded")
	}
	must(t, s.RenewLock(ctx, "team/web", "run-a", at(time.Hour)))
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(30*time.Minute)), at(30*time.Minute), nil), "run-a")

	// Release, then another run acquires.
	must(t, s.ReleaseLock(ctx, "team/web", "run-a"))
	must(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(31*time.Minute)), at(31*time.Minute), nil))
	if err := s.RenewLock(ctx, "team/web", "run-a", at(2*time.Hour)); err == nil {
		t.Error("RenewLock by a run whose lock was released succeeded")
	}
}

func testLockTakeover(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.AcquireLock(ctx, lease("team/web", "run-a", at(0)), at(0), nil))

	// At the expiry instant the lease is over.
	must(t, s.AcquireLock(ctx, lease("team/web", "run-b", at(time.Minute)), at(time.Minute), nil))
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-a", at(61*time.Second)), at(61*time.Second), nil), "run-b")
	must(t, s.ReleaseLock(ctx, "team/web", "run-a")) // the old holder's release must not free run-b's lock
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(62*time.Second)), at(62*time.Second), nil), "run-b")

	// A live lease whose holder is dead is taken over; dead sees the holder.
	var asked store.Lock
	dead := func(h store.Lock) bool { asked = h; return true }
	must(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(63*time.Second)), at(63*time.Second), dead))
	if asked.RunID != "run-b" || asked.PID != 7 {
		t.Errorf("dead was asked about %+v, want run-b's lease", asked)
	}
	if err := s.RenewLock(ctx, "team/web", "run-b", at(time.Hour)); err == nil {
		t.Error("RenewLock by a run whose lock was taken over succeeded")
	}
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-d", at(64*time.Second)), at(64*time.Second), nil), "run-c")
}

func testAudit(t *testing.T, s store.Store) {
	ctx := t.Context()
	events := []store.AuditEvent{
		{Env: "team/web", Actor: "alice", Action: "apply", Revision: 2, RunID: "r1", Reason: "ticket-1", Time: at(0)},
		{Env: "team/api", Actor: "bob", Action: "drift", Time: at(time.Second)},
		{Env: "team/web", Actor: "carol", Action: "approve", Component: "db", Detail: "looks fine", Time: at(2 * time.Second)},
	}
	for _, e := range events {
		must(t, s.AppendAudit(ctx, e))
	}
	all, err := s.Audit(ctx, "")
	must(t, err)
	web, err := s.Audit(ctx, "team/web")
	must(t, err)
	if len(all) != 3 || len(web) != 2 {
		t.Fatalf("got %d events in all and %d for team/web, want 3 and 2", len(all), len(web))
	}
	for i := range all {
		if all[i].ID == 0 || (i > 0 && all[i].ID <= all[i-1].ID) {
			t.Errorf("event IDs not increasing: %d after %d", all[i].ID, all[max(i-1, 0)].ID)
		}
		all[i].ID = 0
	}
	equal(t, "all events, oldest first", all, events)
	equal(t, "team/web's actions", []string{web[0].Action, web[1].Action}, []string{"apply", "approve"})
	none, err := s.Audit(ctx, "team/none")
	must(t, err)
	if len(none) != 0 {
		t.Errorf("events of an unknown env: %v", none)
	}
}

// testConcurrentWrites has writers and readers race; a store that lets
// "database is busy" or a lost update surface fails it.
func testConcurrentWrites(t *testing.T, s store.Store) {
	const workers, perWorker = 8, 50
	ctx := t.Context()
	must(t, s.CreateRun(ctx, run("r1", "team/web", at(0))))
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				if err := concurrentStep(ctx, s, w, i); err != nil {
					errs <- fmt.Errorf("worker %d step %d: %w", w, i, err)
					return
				}
			}
		})
		wg.Go(func() {
			for range perWorker / 5 {
				if _, err := s.ComponentStates(ctx, "team/web"); err != nil {
					errs <- fmt.Errorf("reader %d: %w", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	crs, err := s.ComponentRuns(ctx, "r1")
	must(t, err)
	events, err := s.Audit(ctx, "team/web")
	must(t, err)
	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	if len(crs) != workers*perWorker || len(events) != workers*perWorker || len(states) != workers {
		t.Errorf("got %d component runs, %d events, %d states; want %d, %d, %d",
			len(crs), len(events), len(states), workers*perWorker, workers*perWorker, workers)
	}
	for _, st := range states {
		if st.Revision != perWorker-1 {
			t.Errorf("state of %s at revision %d, want the last write's %d", st.Component, st.Revision, perWorker-1)
		}
	}
}

func concurrentStep(ctx context.Context, s store.Store, w, i int) error {
	comp := fmt.Sprintf("c%d", w)
	cr := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: comp, Operation: "apply", Status: store.StatusRunning, StartedAt: at(0)}
	if err := s.StartComponentRun(ctx, cr); err != nil {
		return err
	}
	cr.Status, cr.FinishedAt = store.StatusSucceeded, at(time.Second)
	st := &store.ComponentState{Status: "applied", Revision: i, UpdatedAt: at(time.Second), Outputs: map[string]store.OutputValue{
		"n":      {Value: fmt.Appendf(nil, "%d", i)},
		"secret": {Value: []byte(`"s"`), Sensitive: true},
	}}
	if err := s.FinishComponentRun(ctx, *cr, st); err != nil {
		return err
	}
	return s.AppendAudit(ctx, store.AuditEvent{Env: "team/web", Actor: comp, Action: "apply", Component: comp, Time: at(time.Second)})
}
