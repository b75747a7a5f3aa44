package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/web"
)

// countingStore counts the store's reads, by method: what a page costs.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingStore) count(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[method]++
}

// take returns the reads counted since the last take, and their total.
func (c *countingStore) take() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, n := c.reads, 0
	for _, k := range out {
		n += k
	}
	c.reads = map[string]int{}
	return out, n
}

func (c *countingStore) Revision(ctx context.Context, env string, n int) (store.Revision, error) {
	c.count("Revision")
	return c.Store.Revision(ctx, env, n)
}
func (c *countingStore) Revisions(ctx context.Context, env string, f store.RevisionFilter) ([]store.Revision, error) {
	c.count("Revisions")
	return c.Store.Revisions(ctx, env, f)
}
func (c *countingStore) Environment(ctx context.Context, id string) (store.Environment, error) {
	c.count("Environment")
	return c.Store.Environment(ctx, id)
}
func (c *countingStore) Environments(ctx context.Context, f store.EnvironmentFilter) ([]store.Environment, error) {
	c.count("Environments")
	return c.Store.Environments(ctx, f)
}
func (c *countingStore) Run(ctx context.Context, id string) (store.Run, error) {
	c.count("Run")
	return c.Store.Run(ctx, id)
}
func (c *countingStore) Runs(ctx context.Context, env string, f store.RunFilter) ([]store.Run, error) {
	c.count("Runs")
	return c.Store.Runs(ctx, env, f)
}
func (c *countingStore) LastRuns(ctx context.Context, envs []string) (map[string]store.Run, error) {
	c.count("LastRuns")
	return c.Store.LastRuns(ctx, envs)
}
func (c *countingStore) EnvironmentSummaries(ctx context.Context, f store.EnvironmentFilter) ([]store.EnvironmentSummary, error) {
	c.count("EnvironmentSummaries")
	return c.Store.EnvironmentSummaries(ctx, f)
}
func (c *countingStore) EnvironmentRows(ctx context.Context, f store.EnvironmentRowFilter) ([]store.EnvironmentRow, int, error) {
	c.count("EnvironmentRows")
	return c.Store.EnvironmentRows(ctx, f)
}
func (c *countingStore) EnvironmentDetail(ctx context.Context, id string) (store.EnvironmentDetail, error) {
	c.count("EnvironmentDetail")
	return c.Store.EnvironmentDetail(ctx, id)
}
func (c *countingStore) EnvironmentVersions(ctx context.Context, f store.EnvironmentFilter) ([]store.EnvironmentVersion, error) {
	c.count("EnvironmentVersions")
	return c.Store.EnvironmentVersions(ctx, f)
}
func (c *countingStore) EnvironmentVersion(ctx context.Context, id string) (int64, error) {
	c.count("EnvironmentVersion")
	return c.Store.EnvironmentVersion(ctx, id)
}
func (c *countingStore) ComponentRuns(ctx context.Context, runID string) ([]store.ComponentRun, error) {
	c.count("ComponentRuns")
	return c.Store.ComponentRuns(ctx, runID)
}
func (c *countingStore) LatestComponentRuns(ctx context.Context, env string) ([]store.ComponentRun, error) {
	c.count("LatestComponentRuns")
	return c.Store.LatestComponentRuns(ctx, env)
}
func (c *countingStore) LastComponentRun(ctx context.Context, env, component string) (store.ComponentRun, error) {
	c.count("LastComponentRun")
	return c.Store.LastComponentRun(ctx, env, component)
}
func (c *countingStore) ComponentStates(ctx context.Context, env string) (map[string]store.ComponentState, error) {
	c.count("ComponentStates")
	return c.Store.ComponentStates(ctx, env)
}
func (c *countingStore) CountComponents(ctx context.Context, status string) (int, error) {
	c.count("CountComponents")
	return c.Store.CountComponents(ctx, status)
}
func (c *countingStore) Lock(ctx context.Context, env string) (store.Lock, error) {
	c.count("Lock")
	return c.Store.Lock(ctx, env)
}
func (c *countingStore) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	c.count("ListApprovals")
	return c.Store.ListApprovals(ctx, f)
}
func (c *countingStore) Audit(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, error) {
	c.count("Audit")
	return c.Store.Audit(ctx, f)
}
func (c *countingStore) Version(ctx context.Context) (int64, error) {
	c.count("Version")
	return c.Store.Version(ctx)
}

// seedRows puts n environments of team into st, each as a list row shows
// the most: applied from a commit, an apply run, a drift check that found
// a component drifted, and component states.
func seedRows(t *testing.T, st store.Store, team string, n int) {
	t.Helper()
	ctx := context.Background()
	spec := []byte(`{"apiVersion":"knit.dev/v1","kind":"Environment","metadata":{"name":"x"},"spec":{"components":[]}}`)
	for i := range n {
		id := fmt.Sprintf("%s/env-%02d", team, i)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("seed %s: %v", id, err)
			}
		}
		_, err := st.PutRevision(ctx, store.Environment{ID: id, Team: team, Name: id[len(team)+1:]},
			store.Revision{Source: "seed", Spec: spec, Commit: "c0ffee"})
		must(err)
		must(st.SetAppliedRevision(ctx, id, 1))
		started := time.Now().Add(-time.Hour)
		must(st.CreateRun(ctx, store.Run{ID: id + "-apply", Env: id, Kind: "apply", Status: store.StatusSucceeded, StartedAt: started}))
		must(st.CreateRun(ctx, store.Run{ID: id + "-drift", Env: id, Kind: "drift", Status: store.StatusRunning, StartedAt: started.Add(time.Minute)}))
		_, err = st.AcquireLock(ctx, store.Lock{Env: id, RunID: id + "-drift"}, time.Hour, nil)
		must(err)
		must(st.StartComponentRun(ctx, &store.ComponentRun{RunID: id + "-drift", Env: id, Component: "db", Operation: "drift",
			Status: "drifted", StartedAt: started}))
		must(st.ReleaseLock(ctx, id, id+"-drift"))
		must(st.PutComponentState(ctx, store.ComponentState{Env: id, Component: "db", Status: "applied", Revision: 1}))
		must(st.SetEnvironmentStatus(ctx, id, "provisioned"))
	}
}

// TestEnvironmentsPageReadsAreConstant: a page of the environments list
// costs the same store reads whether it shows 3 rows or 50, in every sort
// (the rows come in one read, sorted and cut by the store). The dashboard
// runs alone on loopback, so no background loop reads meanwhile.
func TestEnvironmentsPageReadsAreConstant(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{Store: st, reads: map[string]int{}}
	seedRows(t, cs, "big", 55)
	seedRows(t, cs, "small", 3)
	ctx := context.Background()
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: t.TempDir(), Store: cs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	secret, _, err := knit.NewCreateToken(k, "viewer-1", store.RoleViewer, nil, "test").Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ui, err := web.New(k, web.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	ui.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	page := func(path string, rows int) (map[string]int, int) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "knit_token", Value: secret})
		cs.take()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		by, n := cs.take()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if got := len(envRowLink.FindAllString(string(body), -1)); got != rows {
			t.Fatalf("GET %s shows %d rows, want %d", path, got, rows)
		}
		return by, n
	}
	page("/", 50) // the list of teams is read once and kept
	for _, sort := range []string{"", "&sort=state", "&sort=updated"} {
		small, ns := page("/?team=small"+sort, 3)
		big, nb := page("/?team=big"+sort, 50)
		t.Logf("sort %q: %d reads for 3 rows %v, %d for 50 %v", sort, ns, small, nb, big)
		if nb != ns {
			t.Errorf("sort %q: 50 rows take %d store reads %v, 3 rows %d %v: a page's reads grow with its rows", sort, nb, big, ns, small)
		}
		if big["EnvironmentRows"] != 1 {
			t.Errorf("sort %q: the rows took %d EnvironmentRows reads, want 1 (%v)", sort, big["EnvironmentRows"], big)
		}
	}
	// A late page sorted by last change reads no more than the first.
	_, first := page("/?sort=updated", 50)
	_, late := page("/?sort=updated&page=2", 8)
	if late != first {
		t.Errorf("page 2 by last change takes %d reads, page 1 %d", late, first)
	}
}
