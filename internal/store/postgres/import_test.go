package postgres_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/testtools/pgtest"
)

// TestImportFromSQLite: a SQLite store with a bit of everything, copied
// into PostgreSQL, reads back the same through both stores; the sensitive
// output is sealed again (and readable); new records get new IDs; a second
// copy into the now non-empty store is refused and changes nothing.
func TestImportFromSQLite(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	src, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fill(t, src)

	key, err := keyfile.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := pgtest.Start(t)
	dsn := c.DB(t)
	dst, err := postgres.Open(ctx, dsn, key)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	counts, err := dst.Import(ctx, src, sqlite.Tables)
	if err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int64{"environments": 2, "revisions": 3, "runs": 2, "component_runs": 2, "component_states": 1,
		"outputs": 2, "approvals": 1, "change_sets": 1, "audit_events": 2, "tokens": 1, "settings": 1, "notification_outbox": 1,
		"environment_expiries": 2, "tf_states": 2, "saved_plans": 1, "pipeline_releases": 2, "pipeline_stage_files": 1, "rollouts": 1, "set_rollouts": 1} {
		if counts[table] != want {
			t.Errorf("copied %d rows of %s, want %d", counts[table], table, want)
		}
	}
	same(t, src, dst)
	states, err := dst.ComponentStates(ctx, "team/web")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(states["db"].Outputs["password"].Value); got != `"s3cret"` {
		t.Errorf("the sensitive output reads %q after the copy", got)
	}
	if strings.Contains(string(c.Dump(t, pgtest.DBName(t, dsn))), "s3cret") {
		t.Error("the copied sensitive output, state or plan is in clear in the database")
	}
	// State and saved plans read back, sealed again under this store's key.
	if data, _, err := dst.TFState(ctx, "team/web/db"); err != nil || !strings.Contains(string(data), `"serial":3`) {
		t.Errorf("copied state = %q, %v", data, err)
	}
	if n, err := dst.CountTFStates(ctx); err != nil || n != 2 {
		t.Errorf("copied states = %d, %v; want 2", n, err)
	}
	if plan, err := dst.SavedPlan(ctx, 1); err != nil || string(plan) != "PK\x03\x04plan-s3cret" {
		t.Errorf("copied saved plan = %q, %v", plan, err)
	}

	// New records number after the copied ones.
	a := &store.Approval{Env: "team/web", Component: "app"}
	if err := dst.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.ID <= 1 {
		t.Errorf("a new approval got ID %d, which a copied one has", a.ID)
	}
	if _, err := dst.Import(ctx, src, sqlite.Tables); err == nil || !strings.Contains(err.Error(), "already holds records") {
		t.Errorf("a second copy: err = %v, want a refusal", err)
	}
}

// fill writes one of (nearly) everything into s.
func fill(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	for _, r := range []struct{ env, spec string }{{"team/web", "a"}, {"team/web", "b"}, {"team/api", "a"}} {
		_, err := s.PutRevision(ctx, store.Environment{ID: r.env, Team: "team", Name: r.env}, store.Revision{Spec: []byte(r.spec), CreatedAt: at, File: []byte("f: " + r.spec)})
		must(t, err)
	}
	must(t, s.SetAppliedRevision(ctx, "team/web", 2))
	must(t, s.CreateRun(ctx, store.Run{ID: "r1", Env: "team/web", Kind: "apply", Status: store.StatusRunning, StartedAt: at}))
	must(t, s.CreateRun(ctx, store.Run{ID: "r2", Env: "team/api", Kind: "drift", Status: store.StatusSucceeded, StartedAt: at}))
	_, err := s.AcquireLock(ctx, store.Lock{Env: "team/web", RunID: "r1"}, time.Hour, nil)
	must(t, err)
	cr := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply", StartedAt: at,
		Cause: store.Cause{ReasonCode: "UpstreamFailed", Upstream: []string{"net"}}}
	must(t, s.StartComponentRun(ctx, cr, &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "app"}))
	cr.Status, cr.FinishedAt, cr.PlanSummary, cr.Log = "applied", at.Add(time.Minute), []byte(`{"add":1}`), "log\n"
	must(t, s.FinishComponentRun(ctx, *cr, &store.ComponentState{Status: "applied", Revision: 2, UpdatedAt: at,
		Outputs: map[string]store.OutputValue{"password": {Value: []byte(`"s3cret"`), Sensitive: true}, "host": {Value: []byte(`"h"`)}}}))
	must(t, s.ReleaseLock(ctx, "team/web", "r1"))
	must(t, s.RecordOutcome(ctx, store.RunOutcome{RunID: "r1", Status: store.StatusSucceeded, At: at.Add(2 * time.Minute),
		Policy: []byte(`{"decisions":[{"kind":"warn","message":"m","file":"p.rego","line":2,"rule":"warn"}]}`)}))
	a := &store.Approval{Env: "team/web", Component: "db", RunID: "r1", Plan: []byte{0, 1, 0xff}, PlanChecksum: "sha256:x"}
	must(t, s.CreateApproval(ctx, a))
	must(t, s.SavePlan(ctx, a.ID, []byte("PK\x03\x04plan-s3cret")))
	importState(t, s, "team/web/db", []byte(`{"serial":3,"password":"s3cret"}`))
	importState(t, s, "team/api/net", []byte(`{"serial":1}`))
	must(t, s.CreateChangeSet(ctx, &store.ChangeSet{Env: "team/web", RunID: "r1", Checksum: "c",
		Components: []store.ChangeSetComponent{{Component: "db", ApprovalID: a.ID, PlanChecksum: "sha256:x", Gated: true}}}))
	must(t, s.AppendAudit(ctx, store.AuditEvent{Env: "team/web", Actor: "alice", Action: "apply", Time: at}))
	must(t, s.AppendAudit(ctx, store.AuditEvent{Env: "team/api", Actor: "bob", Action: "drift"}))
	must(t, s.CreateToken(ctx, store.Token{Name: "ci", Hash: "h1", Role: store.RoleAdmin, Teams: []string{"team"}}))
	must(t, s.SetSetting(ctx, "git.commit", "abc"))
	_, _, err = s.AddNotification(ctx, "team/web", []string{"ops"}, []byte(`{}`))
	must(t, err)
	must(t, s.SetExpiry(ctx, "team/web", at.Add(time.Hour), nil))
	must(t, s.SetExpiry(ctx, "team/api", at.Add(2*time.Hour), nil))
	must(t, s.MarkExpiryWarned(ctx, "team/web", at.Add(time.Hour)))
	must(t, s.PutPipeline(ctx, store.Pipeline{Name: "web", Team: "team", Definition: []byte(`{}`), Commit: "c1", UpdatedAt: at}))
	for _, r := range []store.Release{{Pipeline: "web", ID: "r-1", Author: "mallory", CreatedAt: at},
		{Pipeline: "web", ID: "r-2", Author: "bob", AuthorVerified: true, CreatedAt: at}} {
		_, _, err := s.AddRelease(ctx, r)
		must(t, err)
	}
	must(t, s.ApprovePromotion(ctx, store.PromotionApproval{Pipeline: "web", Release: "r-2", Stage: "prod", Actor: "root", Forced: true, ApprovedAt: at}, nil))
	must(t, s.PutStageFile(ctx, store.StageFile{Pipeline: "web", Stage: "prod", SeenHash: "h", SeenCommit: "c2",
		Change: store.StageChange{ID: "c-1", Commit: "c2", Hash: "h", Diff: "-1\n+2\n", State: "Pending", Release: "r-2",
			Author: "bob", AuthorVerified: true, Subject: "more replicas", ChangedAt: at}}, nil))
	must(t, s.PutRollout(ctx, store.Rollout{Env: "team/web", ID: "ro-1", State: "paused", Step: 1, Weight: 10, RunID: "run-1", Detail: "{}", UpdatedAt: at}, nil))
	must(t, s.PutWaveRollout(ctx, store.WaveRollout{ID: "team/fleet", Team: "team", State: []byte(`{"wave":1}`), UpdatedAt: at}, nil))
}

// same checks that a and b read the same records.
func same(t *testing.T, a, b store.Store) {
	t.Helper()
	ctx := t.Context()
	reads := map[string]func(s store.Store) (any, error){
		"environments":   func(s store.Store) (any, error) { return s.Environments(ctx, store.EnvironmentFilter{}) },
		"revisions":      func(s store.Store) (any, error) { return s.Revisions(ctx, "team/web", store.RevisionFilter{}) },
		"runs":           func(s store.Store) (any, error) { return s.Runs(ctx, "", store.RunFilter{}) },
		"component runs": func(s store.Store) (any, error) { return s.ComponentRuns(ctx, "r1") },
		"states":         func(s store.Store) (any, error) { return s.ComponentStates(ctx, "team/web") },
		"approvals":      func(s store.Store) (any, error) { return s.ListApprovals(ctx, store.ApprovalFilter{}) },
		"change sets":    func(s store.Store) (any, error) { return s.ListChangeSets(ctx, store.ChangeSetFilter{}) },
		"audit":          func(s store.Store) (any, error) { return s.Audit(ctx, store.AuditFilter{}) },
		"tokens":         func(s store.Store) (any, error) { return s.ListTokens(ctx) },
		"settings":       func(s store.Store) (any, error) { return s.Settings(ctx, "") },
		"outbox":         func(s store.Store) (any, error) { return s.PendingNotifications(ctx) },
		"expiries":       func(s store.Store) (any, error) { return s.Expiries(ctx) },
		"releases":       func(s store.Store) (any, error) { return s.Releases(ctx, "web") },
		"promotions":     func(s store.Store) (any, error) { return s.PromotionApprovals(ctx, "web") },
		"stage files":    func(s store.Store) (any, error) { return s.StageFiles(ctx, "web") },
		"rollouts":       func(s store.Store) (any, error) { return s.Rollouts(ctx) },
		"set rollouts":   func(s store.Store) (any, error) { return s.ListWaveRollouts(ctx, "") },
		"detail": func(s store.Store) (any, error) {
			d, err := s.EnvironmentDetail(ctx, "team/web")
			return d.Components, err
		},
		"newest run": func(s store.Store) (any, error) { // a joined run, with its policy
			d, err := s.EnvironmentDetail(ctx, "team/web")
			return d.LastRun, err
		},
	}
	for what, read := range reads {
		va, err := read(a)
		must(t, err)
		vb, err := read(b)
		must(t, err)
		if !reflect.DeepEqual(va, vb) {
			t.Errorf("%s differ after the copy:\nsqlite   %+v\npostgres %+v", what, va, vb)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestImportSeededStore: a seeded SQLite store (make loadtest's: its
// revisions keep no file, an empty blob) copies into PostgreSQL, whose
// revisions.file is NOT NULL: an empty blob stays empty, not NULL.
func TestImportSeededStore(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	src, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	spec := func(team, env string, comps int) []byte { return []byte(`{"spec":{"teamName":"` + team + `"}}`) }
	if err := src.Seed(ctx, 3, 2, spec); err != nil {
		t.Fatal(err)
	}
	key, err := keyfile.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := postgres.Open(ctx, pgtest.Start(t).DB(t), key)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	counts, err := dst.Import(ctx, src, sqlite.Tables)
	if err != nil {
		t.Fatal(err)
	}
	if counts["revisions"] != 3 {
		t.Errorf("copied %d revisions, want 3", counts["revisions"])
	}
}

// importState stores data as key's state, which has none yet.
func importState(t *testing.T, s store.Store, key string, data []byte) {
	t.Helper()
	if done, err := s.ImportTFState(t.Context(), key, data); err != nil || !done {
		t.Fatalf("import state %s: %v, %v", key, done, err)
	}
}
