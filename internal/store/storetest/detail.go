package storetest

import (
	"fmt"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testEnvironmentDetail: an environment's page in one call agrees with what
// the single reads say: lock, newest run, newest drift run, and every
// component with a state or a run (by name), outputs counted, logs left out.
func testEnvironmentDetail(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.EnvironmentDetail(ctx, "team/web")
	wantNotFound(t, err, "detail of an unknown environment")

	_, err = s.PutRevision(ctx, env("team/web"), rev("a", at(0)))
	must(t, err)
	d, err := s.EnvironmentDetail(ctx, "team/web")
	must(t, err)
	if d.ID != "team/web" || d.Metadata != "meta-team/web" || d.Lock != nil || d.LastRun != nil || d.LastDrift != nil || len(d.Components) != 0 {
		t.Errorf("detail of a new environment: %+v", d)
	}

	for i, id := range []string{"r1", "d1", "r2"} {
		r := run(id, "team/web", at(time.Duration(i)*time.Hour))
		if id == "d1" {
			r.Kind = "drift"
		}
		must(t, s.CreateRun(ctx, r))
	}
	lockFor(t, s, "team/web", "r2")
	start := func(runID, comp string) store.ComponentRun {
		cr := &store.ComponentRun{RunID: runID, Env: "team/web", Component: comp, Operation: "apply", Status: "applied",
			Code: "applied", Reason: "ok", PlanSummary: []byte(`{"add":1}`), Log: "log of " + comp, StartedAt: at(time.Hour)}
		must(t, s.StartComponentRun(ctx, cr))
		return *cr
	}
	start("r2", "web")
	start("r2", "db")
	start("r2", "job") // run, never a state
	webRun := start("r2", "web")
	state := func(comp string, outputs ...string) store.ComponentState {
		st := store.ComponentState{Env: "team/web", Component: comp, Status: "applied", Fingerprint: "f-" + comp, Revision: 1,
			UpdatedAt: at(time.Hour), Outputs: map[string]store.OutputValue{}}
		for _, o := range outputs {
			st.Outputs[o] = store.OutputValue{Value: []byte(`"v"`), Sensitive: o == "secret"}
		}
		return st
	}
	must(t, s.PutComponentState(ctx, state("web", "url", "secret")))
	must(t, s.PutComponentState(ctx, state("db")))
	must(t, s.PutComponentState(ctx, state("old", "id"))) // a state, never a run

	d, err = s.EnvironmentDetail(ctx, "team/web")
	must(t, err)
	lock, err := s.Lock(ctx, "team/web")
	must(t, err)
	equal(t, "lock", *d.Lock, lock)
	last, err := s.Runs(ctx, "team/web", store.RunFilter{Limit: 1})
	must(t, err)
	equal(t, "last run", *d.LastRun, last[0])
	drift, err := s.Run(ctx, "d1")
	must(t, err)
	equal(t, "last drift", *d.LastDrift, drift)

	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	latest, err := s.LatestComponentRuns(ctx, "team/web")
	must(t, err)
	runs := map[string]store.ComponentRun{}
	for _, cr := range latest {
		runs[cr.Component] = cr
	}
	var names []string
	for _, c := range d.Components {
		names = append(names, c.Name)
		st := states[c.Name]
		equal(t, c.Name+" outputs", c.Outputs, len(st.Outputs))
		st.Outputs = nil
		equal(t, c.Name+" state", c.State, st)
		equal(t, c.Name+" last run", c.LastRun, runs[c.Name])
	}
	equal(t, "components", names, []string{"db", "job", "old", "web"})
	if d.Components[3].LastRun.ID != webRun.ID || d.Components[3].LastRun.Log != "" {
		t.Errorf("web's last run: %+v, want the newest (%d), log left out", d.Components[3].LastRun, webRun.ID)
	}
}

// testEnvironmentSummaries: a page of environments with their newest runs
// is what Environments and LastRuns say, for every filter.
func testEnvironmentSummaries(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"a/1", "a/2", "b/1", "b/2"} {
		e := env(id)
		e.Team = id[:1]
		_, err := s.PutRevision(ctx, e, rev(id, at(0)))
		must(t, err)
		if i%2 == 0 {
			must(t, s.SetEnvironmentStatus(ctx, id, "failed"))
		}
		for j := range i { // a/1 has no run, b/2 three
			must(t, s.CreateRun(ctx, run(id+"-"+string(rune('a'+j)), id, at(time.Duration(j)*time.Minute))))
		}
	}
	for _, f := range []store.EnvironmentFilter{{}, {Limit: 2}, {After: "a/2"}, {Team: "b"}, {Status: "failed"},
		{Team: "b", Status: "failed", After: "a/9", Limit: 1}} {
		got, err := s.EnvironmentSummaries(ctx, f)
		must(t, err)
		envs, err := s.Environments(ctx, f)
		must(t, err)
		var ids []string
		for _, e := range envs {
			ids = append(ids, e.ID)
		}
		last, err := s.LastRuns(ctx, ids)
		must(t, err)
		var want []store.EnvironmentSummary
		for _, e := range envs {
			es := store.EnvironmentSummary{Environment: e}
			if r, ok := last[e.ID]; ok {
				es.LastRun = &r
			}
			want = append(want, es)
		}
		equal(t, fmt.Sprintf("summaries %+v", f), got, want)
	}
}
