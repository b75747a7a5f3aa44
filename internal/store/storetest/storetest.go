// Package storetest is the conformance suite every store.Store
// implementation must pass: Run(t, open) checks each method's contract
// against fresh stores made by open.
package storetest

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// Run runs the conformance suite, one subtest per area, each on a fresh
// store from open. open should register the store's cleanup with t, and
// must make now the store's clock: the time that judges lock leases and
// stamps records given no time. The suite's clock starts at t0 and moves
// only when a test moves it, so a store that reads the wall clock instead
// fails the lease and fencing tests.
func Run(t *testing.T, open func(t *testing.T, now func() time.Time) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, c *clock)
	}{
		{"Revisions", plain(testRevisions)},
		{"WaveRollouts", plain(testWaveRollouts)},
		{"Environments", plain(testEnvironments)},
		{"Runs", plain(testRuns)},
		{"StartRun", plain(testStartRun)},
		{"InterruptRuns", plain(testInterruptRuns)},
		{"ComponentRuns", plain(testComponentRuns)},
		{"LastComponentRun", plain(testLastComponentRun)},
		{"ComponentStates", plain(testComponentStates)},
		{"SensitiveOutputs", plain(testSensitiveOutputs)},
		{"StoreClock", testStoreClock},
		{"Locks", testLocks},
		{"LockTakeover", testLockTakeover},
		{"LockLease", testLockLease},
		{"Fencing", testFencing},
		{"FencingLiveRun", testFencingLiveRun},
		{"FencingNoLock", testFencingNoLock},
		{"RecordOutcome", testRecordOutcome},
		{"RecordOutcomeReleasesTheLock", plain(testRecordOutcomeReleasesTheLock)},
		{"Verification", plain(testVerification)},
		{"AppliedRevision", plain(testAppliedRevision)},
		{"DeleteUnappliedEnvironment", plain(testDeleteUnappliedEnvironment)},
		{"Paging", plain(testPaging)},
		{"PagingEnvironments", plain(testPagingEnvironments)},
		{"TeamsFilter", plain(testTeamsFilter)},
		{"LatestComponentRuns", plain(testLatestComponentRuns)},
		{"LastRuns", plain(testLastRuns)},
		{"EnvironmentDetail", plain(testEnvironmentDetail)},
		{"PreviewIsNotTheLastRun", plain(testPreviewIsNotTheLastRun)},
		{"EnvironmentSummaries", plain(testEnvironmentSummaries)},
		{"EnvironmentRows", testEnvironmentRows},
		{"EnvironmentVersions", plain(testEnvironmentVersions)},
		{"Tokens", plain(testTokens)},
		{"CreateApproval", plain(testCreateApproval)},
		{"OpenApproval", plain(testOpenApproval)},
		{"ListApprovals", plain(testListApprovals)},
		{"DecideApproval", plain(testDecideApproval)},
		{"DecideApprovalRace", plain(testDecideApprovalRace)},
		{"ChangeSets", plain(testChangeSets)},
		{"SupersedeRuns", plain(testSupersedeRuns)},
		{"Audit", plain(testAudit)},
		{"ConcurrentWrites", plain(testConcurrentWrites)},
		{"ToolProcesses", testToolProcesses},
		{"Outbox", plain(testOutbox)},
		{"Expiries", plain(testExpiries)},
		{"Previews", plain(testPreviews)},
		{"TFStates", plain(testTFStates)},
		{"TFLockOfAFinishedRun", plain(testTFLockOfAFinishedRun)},
		{"TFStateFence", plain(testTFStateFence)},
		{"SavedPlans", plain(testSavedPlans)},
		{"Pipelines", plain(testPipelines)},
		{"StageFiles", plain(testStageFiles)},
		{"Rollouts", plain(testRollouts)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{now: at(0)}
			tt.fn(t, open(t, c.Now), c)
		})
	}
}

// plain adapts a test that does not move the clock.
func plain(fn func(t *testing.T, s store.Store)) func(t *testing.T, s store.Store, c *clock) {
	return func(t *testing.T, s store.Store, _ *clock) { fn(t, s) }
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

	// The file as written comes back as it went in.
	withFile := rev("c", at(4*time.Hour))
	withFile.File = []byte("# as written\nspec: c   # kept\n")
	r4, err := s.PutRevision(ctx, env("team/web"), withFile)
	must(t, err)
	got, err := s.Revision(ctx, "team/web", r4.Number)
	must(t, err)
	if string(got.File) != string(withFile.File) {
		t.Errorf("revision %d's file = %q, want %q", r4.Number, got.File, withFile.File)
	}
}

func testEnvironments(t *testing.T, s store.Store) {
	ctx := t.Context()
	envs, err := s.Environments(ctx, store.EnvironmentFilter{})
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

	envs, err = s.Environments(ctx, store.EnvironmentFilter{})
	must(t, err)
	slices.SortFunc(envs, func(a, b store.Environment) int { return strings.Compare(a.ID, b.ID) })
	var ids, statuses []string
	for _, e := range envs {
		ids, statuses = append(ids, e.ID), append(statuses, string(e.Status))
	}
	equal(t, "environment IDs", ids, []string{"team/a", "team/b"})
	equal(t, "environment statuses", statuses, []string{"provisioned", ""})
}
