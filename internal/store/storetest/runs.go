package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

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

	runs, err := s.Runs(ctx, "team/web", store.RunFilter{})
	must(t, err)
	equal(t, "runs newest first", runIDs(runs), []string{"r3", "r2", "r1"})
	runs, err = s.Runs(ctx, "team/web", store.RunFilter{Limit: 2})
	must(t, err)
	equal(t, "runs with limit 2", runIDs(runs), []string{"r3", "r2"})
	runs, err = s.Runs(ctx, "team/none", store.RunFilter{})
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
	lockFor(t, s, "team/web", "dead")
	running := &store.ComponentRun{RunID: "dead", Env: "team/web", Component: "db", Operation: "apply", Status: string(store.StatusRunning), StartedAt: at(0)}
	finished := &store.ComponentRun{RunID: "dead", Env: "team/web", Component: "net", Operation: "apply", Status: string(store.StatusRunning), StartedAt: at(0)}
	must(t, s.StartComponentRun(ctx, running))
	must(t, s.StartComponentRun(ctx, finished))
	finished.Status, finished.FinishedAt = string(store.StatusSucceeded), at(time.Second)
	must(t, s.FinishComponentRun(ctx, *finished, nil))

	alive := func(pid int) bool { return pid == 200 }
	ids, err := s.InterruptRuns(ctx, "team/web", alive, at(time.Minute))
	must(t, err)
	equal(t, "interrupted runs", ids, []string{"dead"})

	for id, status := range map[string]store.RunStatus{"dead": store.StatusInterrupted, "live": store.StatusRunning,
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
	equal(t, "component runs of the interrupted run", statuses, map[string]string{"db": string(store.StatusInterrupted), "net": string(store.StatusSucceeded)})

	ids, err = s.InterruptRuns(ctx, "team/web", alive, at(2*time.Minute))
	must(t, err)
	if len(ids) != 0 {
		t.Errorf("second InterruptRuns interrupted %v again", ids)
	}
}
