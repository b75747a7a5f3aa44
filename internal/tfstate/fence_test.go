package tfstate_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/pgtest"
	"knit.dev/knit/internal/tfstate"
)

// TestGrantsAreFencedByTheirRun: on each store, a grant reaches the state
// only while its run holds the environment's lock. A grant copied from a
// run that ended (the lock released, or taken over by another run) is
// refused with 403 on GET, POST, DELETE and LOCK and changes nothing; a
// write needs the state lock (409 without one); a write of an older
// serial or another lineage is 409; a read-only grant (a plan's) reads
// but never locks, writes or deletes (403).
func TestGrantsAreFencedByTheirRun(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Store{
		"sqlite":   openSQLite,
		"postgres": func(t *testing.T) store.Store { return openPG(t, pgtest.Start(t).DB(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			srv, err := tfstate.Start(st)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			const key = "team/prod/db"
			holdEnv(t, st, testRun)
			v5 := `{"serial":5,"lineage":"L1","resources":[]}`
			if code, body := call(t, srv, "POST", key, "", "", []byte(v5)); code != http.StatusConflict {
				t.Errorf("a write without the state lock: %d %s, want 409", code, body)
			}
			putLocked(t, srv, key, []byte(v5))

			// Older serial, other lineage: 409, even from the lock's holder.
			if code, body := call(t, srv, "LOCK", key, "", "", lockBody("tool-a")); code != 200 {
				t.Fatalf("LOCK: %d %s", code, body)
			}
			for _, old := range []string{`{"serial":4,"lineage":"L1"}`, `{"serial":6,"lineage":"L2"}`} {
				if code, body := call(t, srv, "POST", key, "", "?ID=tool-a", []byte(old)); code != http.StatusConflict {
					t.Errorf("a write of %s over serial 5 of L1: %d %s, want 409", old, code, body)
				}
			}
			if code, body := call(t, srv, "POST", key, "", "?ID=tool-a", []byte(`{"serial":"x"}`)); code != http.StatusBadRequest {
				t.Errorf("a write with an unreadable serial: %d %s, want 400", code, body)
			}

			// A plan's grant reads, and nothing else.
			ro := srv.Grant(key, testRun, false)
			if code, body := send(t, srv, "GET", key, ro["TF_HTTP_USERNAME"], ro["TF_HTTP_PASSWORD"], "", nil); code != 200 || body != v5 {
				t.Errorf("GET with a read-only grant: %d %q", code, body)
			}
			for _, m := range []struct{ method, query, body string }{{"POST", "?ID=tool-a", `{"serial":9,"lineage":"L1"}`}, {"LOCK", "", string(lockBody("ro"))}, {"DELETE", "?ID=tool-a", ""}, {"UNLOCK", "", string(lockBody("tool-a"))}} {
				if code, body := send(t, srv, m.method, key, ro["TF_HTTP_USERNAME"], ro["TF_HTTP_PASSWORD"], m.query, []byte(m.body)); code != http.StatusForbidden {
					t.Errorf("%s with a read-only grant: %d %s, want 403", m.method, code, body)
				}
			}
			// Its password is not the write grant's.
			if code, _ := send(t, srv, "POST", key, "knit run "+testRun, ro["TF_HTTP_PASSWORD"], "?ID=tool-a", []byte(`{"serial":9,"lineage":"L1"}`)); code != http.StatusUnauthorized {
				t.Errorf("a read-only password under the write user name: %d, want 401", code)
			}

			// The run ends (another takes the environment): its grant,
			// copied, reaches nothing, though it names the state's lock.
			holdEnv(t, st, "run-b")
			for _, m := range []struct{ method, query, body string }{{"GET", "", ""}, {"POST", "?ID=tool-a", `{"serial":9,"lineage":"L1"}`}, {"DELETE", "?ID=tool-a", ""}, {"LOCK", "", string(lockBody("tool-z"))}} {
				if code, body := call(t, srv, m.method, key, "", m.query, []byte(m.body)); code != http.StatusForbidden {
					t.Errorf("%s with the grant of a finished run: %d %s, want 403", m.method, code, body)
				}
			}
			if data, l, err := st.TFState(t.Context(), key); err != nil || string(data) != v5 || l.ID != "tool-a" {
				t.Errorf("after the refusals: %q locked by %q, %v; want %q unchanged", data, l.ID, err, v5)
			}
			must(t, st.ReleaseLock(t.Context(), "team/prod", "run-b"))
			if code, _ := call(t, srv, "GET", key, "", "", nil); code != http.StatusForbidden {
				t.Errorf("GET once no run holds the environment: %d, want 403", code)
			}
		})
	}
}

// flaky fails its first n state writes as an unreachable database does.
type flaky struct {
	store.Store
	n     atomic.Int32
	tries atomic.Int32
}

func (f *flaky) PutTFState(ctx context.Context, key string, data []byte, w store.TFWrite) error {
	f.tries.Add(1)
	if f.n.Add(-1) >= 0 {
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return f.Store.PutTFState(ctx, key, data, w)
}

// TestAFailingStoreWriteIsRetriedWithinTheLease: a store that fails a few
// writes (a database restarting) costs the tool a wait, not its write: the
// server retries, with growing pauses, within half the lease; past it the
// tool gets a 500 (and retries itself: the grant sizes TF_HTTP_RETRY_* to
// the lease). A refusal is never retried.
func TestAFailingStoreWriteIsRetriedWithinTheLease(t *testing.T) {
	f := &flaky{Store: openSQLite(t)}
	srv, err := tfstate.Start(f)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Lease = 4 * time.Second
	holdEnv(t, f, testRun)
	const key = "team/prod/db"
	f.n.Store(3)
	putLocked(t, srv, key, []byte(`{"serial":1,"lineage":"L"}`))
	if n := f.tries.Load(); n != 4 {
		t.Errorf("the write was tried %d times, want 4 (3 failures, then it went through)", n)
	}

	f.n.Store(1000)
	must(t, f.LockTFState(t.Context(), key, store.TFLock{ID: "l", Run: testRun}, nil))
	if code, body := call(t, srv, "POST", key, "", "?ID=l", []byte(`{"serial":2,"lineage":"L"}`)); code != http.StatusInternalServerError || !strings.Contains(body, "connection refused") {
		t.Errorf("a write while the store stays down: %d %s, want 500 with the cause", code, body)
	}
	f.n.Store(0)
	f.tries.Store(0)
	if code, _ := call(t, srv, "POST", key, "", "?ID=l", []byte(`{"serial":0,"lineage":"L"}`)); code != http.StatusConflict || f.tries.Load() != 1 {
		t.Errorf("an older serial: %d after %d tries, want 409 after one", code, f.tries.Load())
	}

	g := srv.Grant(key, testRun, true)
	if g["TF_HTTP_RETRY_MAX"] == "" || g["TF_HTTP_RETRY_WAIT_MIN"] != "1" || g["TF_HTTP_RETRY_WAIT_MAX"] == "" {
		t.Errorf("the grant's retry settings: %v", g)
	}
}
