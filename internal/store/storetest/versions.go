package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testEnvironmentVersions: every write that changes what an environment's
// views show (its summary or its detail) changes its version, and leaves
// the versions of other environments alone; EnvironmentVersions lists what
// Environments lists, with the versions EnvironmentVersion reads.
func testEnvironmentVersions(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.EnvironmentVersion(ctx, "team/web")
	wantNotFound(t, err, "version of an unknown environment")
	_, err = s.PutRevision(ctx, env("team/web"), rev("a", at(0)))
	must(t, err)
	_, err = s.PutRevision(ctx, env("team/other"), rev("a", at(0)))
	must(t, err)

	type view struct {
		Summary []store.EnvironmentSummary
		Detail  store.EnvironmentDetail
	}
	read := func() (view, int64, int64) {
		sum, err := s.EnvironmentSummaries(ctx, store.EnvironmentFilter{After: "team/v", Limit: 1})
		must(t, err)
		d, err := s.EnvironmentDetail(ctx, "team/web")
		must(t, err)
		v, err := s.EnvironmentVersion(ctx, "team/web")
		must(t, err)
		other, err := s.EnvironmentVersion(ctx, "team/other")
		must(t, err)
		return view{sum, d}, v, other
	}
	cr := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply", Status: "running", StartedAt: at(time.Minute)}
	state := store.ComponentState{Env: "team/web", Component: "db", Status: "applied", Revision: 1, UpdatedAt: at(time.Minute),
		Outputs: map[string]store.OutputValue{"url": {Value: []byte(`"u"`)}}}
	steps := []struct {
		name  string
		write func() error
	}{
		{"new revision", func() error { _, err := s.PutRevision(ctx, env("team/web"), rev("b", at(time.Second))); return err }},
		{"applied revision", func() error { return s.SetAppliedRevision(ctx, "team/web", 2) }},
		{"status", func() error { return s.SetEnvironmentStatus(ctx, "team/web", "provisioning") }},
		{"run created", func() error { return s.CreateRun(ctx, run("r1", "team/web", at(time.Minute))) }},
		{"lock taken", func() error {
			_, err := s.AcquireLock(ctx, holder("team/web", "r1"), time.Hour, func(store.Lock) bool { return true })
			return err
		}},
		{"lock renewed", func() error { return s.RenewLock(ctx, "team/web", "r1", 2*time.Hour) }},
		{"component run started", func() error { return s.StartComponentRun(ctx, cr) }},
		{"component run finished with its state", func() error {
			done := *cr
			done.Status, done.FinishedAt = "applied", at(2*time.Minute)
			return s.FinishComponentRun(ctx, done, &state)
		}},
		{"outputs changed", func() error {
			st := state
			st.Outputs = map[string]store.OutputValue{"url": {Value: []byte(`"u"`)}, "id": {Value: []byte(`1`)}}
			return s.PutComponentState(ctx, st)
		}},
		{"run finished", func() error { return s.FinishRun(ctx, "r1", "succeeded", "", at(3*time.Minute)) }},
		{"lock released", func() error { return s.ReleaseLock(ctx, "team/web", "r1") }},
		{"drift run", func() error {
			d := run("d1", "team/web", at(time.Hour))
			d.Kind = "drift"
			return s.CreateRun(ctx, d)
		}},
		{"drift run's outcome recorded", func() error {
			return s.RecordOutcome(ctx, store.RunOutcome{RunID: "d1", Status: "succeeded", At: at(2 * time.Hour),
				Audit: &store.AuditEvent{Env: "team/web", Action: "drift-check"}, EnvStatus: "drifted"})
		}},
	}
	before, v, other := read()
	for _, st := range steps {
		must(t, st.write())
		after, v2, other2 := read()
		if reflect.DeepEqual(before, after) {
			t.Fatalf("%s: the views did not change; the step tests nothing", st.name)
		}
		if v2 == v {
			t.Errorf("%s changed the views but not the version (%d)", st.name, v)
		}
		if other2 != other {
			t.Errorf("%s changed another environment's version: %d, was %d", st.name, other2, other)
		}
		before, v, other = after, v2, other2
	}

	for _, f := range []store.EnvironmentFilter{{}, {Limit: 1}, {After: "team/other"}, {Team: "team"}, {Team: "none"}, {Status: "provisioning"}} {
		envs, err := s.Environments(ctx, f)
		must(t, err)
		vs, err := s.EnvironmentVersions(ctx, f)
		must(t, err)
		var want []store.EnvironmentVersion
		for _, e := range envs {
			n, err := s.EnvironmentVersion(ctx, e.ID)
			must(t, err)
			want = append(want, store.EnvironmentVersion{ID: e.ID, Team: e.Team, Version: n})
		}
		equal(t, fmt.Sprintf("versions %+v", f), vs, want)
	}
}
