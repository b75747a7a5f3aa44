package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/controller/gitops"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// gitFailStore is the SQLite store, except that while armed it fails the
// read GitOps makes of an environment to tell whether a commit changed it
// (the newest revision's validity), and it notes, in order, that failure,
// the commit pointer being written and the wants being read.
type gitFailStore struct {
	store.Store
	armed atomic.Bool
	mu    sync.Mutex
	notes []string
	noted chan struct{} // a note was added
}

var errDisk = errors.New("disk I/O error")

func (f *gitFailStore) note(s string) {
	f.mu.Lock()
	f.notes = append(f.notes, s)
	f.mu.Unlock()
	select {
	case f.noted <- struct{}{}:
	default:
	}
}

func (f *gitFailStore) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.notes)
}

// calledBy reports whether fn (a function name's suffix) is on the stack.
func calledBy(fn string) bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		fr, more := frames.Next()
		if strings.HasSuffix(fr.Function, fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

func (f *gitFailStore) Environment(ctx context.Context, id string) (store.Environment, error) {
	if f.armed.Load() && calledBy("gitops.(*Reconciler).wantFor") {
		f.note("read failed")
		return store.Environment{}, errDisk
	}
	return f.Store.Environment(ctx, id)
}

func (f *gitFailStore) SetSettings(ctx context.Context, kv map[string]string) error {
	if _, ok := kv["git.commit"]; ok && f.armed.Load() {
		f.note("commit recorded")
	}
	return f.Store.SetSettings(ctx, kv)
}

func (f *gitFailStore) Settings(ctx context.Context, prefix string) (map[string]string, error) {
	if prefix == "git.env:" && f.armed.Load() {
		f.note("wants read")
	}
	return f.Store.Settings(ctx, prefix)
}

// TestGitOpsStoreErrorIsNotNoChange: when the store fails while GitOps
// works out what a commit (here a rename) changed, the commit is not
// recorded as done — the failure is never read as "nothing changed" — and
// the next poll, with the store back, records it.
func TestGitOpsStoreErrorIsNotNoChange(t *testing.T) {
	repo := newGitRepo(t)
	repo.commit("envs/one.yaml", envDoc("pay", "one", envOpts{}), "add one")
	sq, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	st := &gitFailStore{Store: sq, noted: make(chan struct{}, 1)}
	h := newHarnessOn(t, server.Config{}, st, controller.Config{Git: &gitops.Config{Poll: time.Hour, Config: gitwatch.Config{
		URL: "file://" + repo.dir, Branch: "main", Path: "envs/", CacheDir: t.TempDir()}}})
	viewer := h.token("watcher", "viewer")
	h.waitProvisioned("pay/one", viewer)

	st.armed.Store(true)
	repo.git("mv", "envs/one.yaml", "envs/renamed.yaml")
	repo.git("commit", "-q", "-m", "rename one")
	hash := repo.git("rev-parse", "HEAD")
	nudge := func() {
		body := `{"ref":"refs/heads/main","after":"` + hash + `"}`
		h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: body, header: signed(webhookSecret, body)}, 202)
	}
	nudge()
	// The poll is over once the loop reads the wants again, after the failure.
	deadline := time.After(hangGuard)
	for {
		notes := st.seen()
		if i := slices.Index(notes, "read failed"); i >= 0 && slices.Contains(notes[i:], "wants read") {
			if j := slices.Index(notes[i:], "commit recorded"); j >= 0 {
				t.Fatalf("the commit was recorded as done although the store failed: %v", notes)
			}
			break
		}
		select {
		case <-st.noted:
		case <-deadline:
			t.Fatalf("the poll did not end: %v", st.seen())
		}
	}
	if got, _ := knit.NewRecords(h.k).Setting(context.Background(), "git.commit"); got == hash {
		t.Fatalf("the commit pointer moved to %s although the store failed", hash)
	}

	st.armed.Store(false)
	nudge()
	deadline = time.After(hangGuard)
	for {
		raw, err := knit.NewRecords(h.k).Setting(context.Background(), "git.env:pay/one")
		var w struct{ Commit, Path string }
		if err == nil && json.Unmarshal([]byte(raw), &w) == nil && w.Commit == hash {
			if w.Path != "envs/renamed.yaml" {
				t.Fatalf("after the rename, pay/one follows %s", w.Path)
			}
			break
		}
		select {
		case <-time.After(20 * time.Millisecond): // polling a setting: no event to wait on
		case <-deadline:
			t.Fatalf("the rename was never recorded: %s %v", raw, err)
		}
	}
}
