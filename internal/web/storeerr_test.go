package web_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/testtools"
)

// revisionFailStore is the SQLite store whose revision reads fail while
// armed: single revisions, and the environments list's rows (which read
// the applied revision's commit in the same query).
type revisionFailStore struct {
	store.Store
	armed atomic.Bool
}

func (f *revisionFailStore) EnvironmentRows(ctx context.Context, rf store.EnvironmentRowFilter) ([]store.EnvironmentRow, int, error) {
	if f.armed.Load() {
		return nil, 0, errors.New("disk I/O error")
	}
	return f.Store.EnvironmentRows(ctx, rf)
}

func (f *revisionFailStore) Revision(ctx context.Context, env string, n int) (store.Revision, error) {
	if f.armed.Load() {
		return store.Revision{}, errors.New("disk I/O error")
	}
	return f.Store.Revision(ctx, env, n)
}

// TestDashboardStoreErrorIsNotNoCommit: when the store fails to read the
// revision a run applied, the environments list and the run page say the
// store failed (500), never show the run as if it had no commit.
func TestDashboardStoreErrorIsNotNoCommit(t *testing.T) {
	sq, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	st := &revisionFailStore{Store: sq}
	w := newWorld(t, adapters.Config{Config: knit.Config{Store: st}})
	dir := filepath.Join(w.dir, "ops")
	testtools.WriteFiles(t, dir, map[string]string{"env.yaml": opsWeb})
	env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	sha := "0123456789abcdef0123456789abcdef01234567"
	if _, err := knit.NewRun(w.k, knit.RunRequest{Kind: "apply", Env: env, Actor: "ann", Source: "git", Root: dir,
		Origin: "file:///srv/git/infra@" + sha + ":env.yaml", Commit: sha, Author: "ann", Message: "first"}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	viewer := w.client("viewer")
	code, page := get(t, viewer, w.url+"/env/ops/web")
	run := regexp.MustCompile(`href="/runs/([^"]+)"`).FindStringSubmatch(page)
	if code != http.StatusOK || run == nil {
		t.Fatalf("the environment page: %d\n%s", code, page)
	}
	st.armed.Store(true)
	for _, u := range []string{"/", "/runs/" + run[1]} {
		code, page := get(t, viewer, w.url+u)
		if code != http.StatusInternalServerError || !strings.Contains(page, "disk I/O error") {
			t.Errorf("%s with a failing store: %d, want 500 naming the error\n%s", u, code, page)
		}
	}
}
