package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/storetest"
)

func openT(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		s := openT(t, t.TempDir())
		s.SetClock(now)
		return s
	})
}

func versions(t *testing.T, s *Store) []int {
	t.Helper()
	rows, err := s.db.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

func TestMigrationsRecordedOnce(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := openT(t, dir)
	if got := versions(t, s); len(got) != len(ms) || got[len(got)-1] != len(ms) {
		t.Fatalf("schema_migrations holds %v, want 1..%d", got, len(ms))
	}
	s.Close()
	s = openT(t, dir)
	if got := versions(t, s); len(got) != len(ms) {
		t.Errorf("after reopening schema_migrations holds %v, want 1..%d", got, len(ms))
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	if _, err := s.db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (999, 'x')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(t.Context(), dir)
	if !errors.Is(err, ErrSchemaNewer) || !strings.Contains(err.Error(), "999") {
		t.Fatalf("opening a version-999 database: err = %v, want ErrSchemaNewer naming 999", err)
	}
}

func TestFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data dir?#%")
	openT(t, dir)
	for name, want := range map[string]os.FileMode{".": 0o700, DBFile: 0o600, KeyFile: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %#o, want %#o", name, fi.Mode().Perm(), want)
		}
		if name == KeyFile && fi.Size() != keyfile.Size {
			t.Errorf("key file holds %d bytes, want %d", fi.Size(), keyfile.Size)
		}
	}
}

func TestPragmas(t *testing.T) {
	s := openT(t, t.TempDir())
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000",
		"synchronous": "1", "cache_size": "-8192"} {
		var got string
		if err := s.db.QueryRow(`PRAGMA ` + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
	// Foreign keys are enforced: a component run needs its run.
	err := s.StartComponentRun(t.Context(), &store.ComponentRun{RunID: "nope", Env: "team/web", Component: "db"})
	if err == nil {
		t.Error("started a component run of a run that does not exist")
	}
}

func TestGroupReadableKeyRefused(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir).Close()
	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o640); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), dir)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("opening with a group-readable key: err = %v, want advice to chmod 600", err)
	}
}

func putSecret(t *testing.T, s *Store, secret, visible string) {
	t.Helper()
	err := s.PutComponentState(t.Context(), store.ComponentState{Env: "team/web", Component: "db", Status: "applied",
		Outputs: map[string]store.OutputValue{
			"password": {Value: []byte(`"` + secret + `"`), Sensitive: true},
			"host":     {Value: []byte(`"` + visible + `"`)},
		}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWrongKeyFailsClearly(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	putSecret(t, s, "secret", "host")
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, KeyFile), bytes.Repeat([]byte{1}, keyfile.Size), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := openT(t, dir).ComponentStates(t.Context(), "team/web")
	if err == nil || !strings.Contains(err.Error(), "knit.key is not the key") {
		t.Fatalf("reading with another key: err = %v", err)
	}
}

// dataBytes is every database file in dir (knit.db, -wal, -shm) concatenated.
func dataBytes(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(filepath.Join(dir, DBFile+suffix))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func TestSensitivePlaintextNotOnDisk(t *testing.T) {
	const secret, visible = "pl41nt3xt-s3cr3t-7c1e", "v1s1bl3-h0st-7c1e"
	dir := t.TempDir()
	s := openT(t, dir)
	putSecret(t, s, secret, visible)

	wal, err := os.ReadFile(filepath.Join(dir, DBFile+"-wal"))
	if err != nil {
		t.Fatal(err)
	}
	// The non-sensitive value proves the search looks where the data is.
	if !bytes.Contains(wal, []byte(visible)) {
		t.Fatal("control value not found in knit.db-wal before checkpoint")
	}
	if bytes.Contains(dataBytes(t, dir), []byte(secret)) {
		t.Fatal("sensitive plaintext found in the database files before checkpoint")
	}

	if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(db, []byte(visible)) {
		t.Fatal("control value not found in knit.db after checkpoint")
	}
	if bytes.Contains(dataBytes(t, dir), []byte(secret)) {
		t.Fatal("sensitive plaintext found in the database files after checkpoint")
	}

	states, err := s.ComponentStates(t.Context(), "team/web")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(states["db"].Outputs["password"].Value); got != `"`+secret+`"` {
		t.Errorf("sensitive output read back as %s", got)
	}
}

func TestDurableAcrossReopen(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	now := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	s := openT(t, dir)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.PutRevision(ctx, store.Environment{ID: "team/web", Team: "team", Name: "web"},
		store.Revision{Hash: "h1", Spec: []byte(`{}`), CreatedAt: now})
	must(err)
	must(s.CreateRun(ctx, store.Run{ID: "r1", Env: "team/web", Status: store.StatusRunning, StartedAt: now}))
	_, err = s.AcquireLock(ctx, store.Lock{Env: "team/web", RunID: "r1"}, time.Hour, nil)
	must(err)
	cr := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", StartedAt: now}
	must(s.StartComponentRun(ctx, cr))
	cr.Status, cr.Log = string(store.StatusSucceeded), "done"
	must(s.FinishComponentRun(ctx, *cr, &store.ComponentState{Status: "applied", UpdatedAt: now,
		Outputs: map[string]store.OutputValue{"pw": {Value: []byte(`"pw"`), Sensitive: true}}}))
	must(s.AppendAudit(ctx, store.AuditEvent{Env: "team/web", Action: "apply", Time: now}))
	must(s.Close())

	s = openT(t, dir)
	e, err := s.Environment(ctx, "team/web")
	must(err)
	r, err := s.Run(ctx, "r1")
	must(err)
	last, err := s.LastComponentRun(ctx, "team/web", "db")
	must(err)
	states, err := s.ComponentStates(ctx, "team/web")
	must(err)
	events, err := s.Audit(ctx, store.AuditFilter{})
	must(err)
	if e.Revision != 1 || !r.StartedAt.Equal(now) || last.Log != "done" ||
		string(states["db"].Outputs["pw"].Value) != `"pw"` || len(events) != 1 {
		t.Errorf("after reopen: env %+v, run %+v, last %+v, states %+v, events %+v", e, r, last, states, events)
	}
	var le *store.LockedError
	if _, err := s.AcquireLock(ctx, store.Lock{Env: "team/web", RunID: "r2"}, time.Hour, nil); !errors.As(err, &le) {
		t.Errorf("lock did not survive reopen: err = %v", err)
	}
}

// TestTwoStoresShareADirectory stands in for two knit processes: separate
// pools and write queues, so only SQLite's locking keeps them apart.
// PutRevision reads the latest revision before writing the next, the case
// where deferred transactions fail with "database is locked".
func TestTwoStoresShareADirectory(t *testing.T) {
	dir := t.TempDir()
	stores := []*Store{openT(t, dir), openT(t, dir)}
	env := store.Environment{ID: "team/web"}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			s := stores[i%2]
			for j := range 25 {
				spec := fmt.Appendf(nil, `{"writer":%d,"n":%d}`, i, j)
				if _, err := s.PutRevision(t.Context(), env, store.Revision{Spec: spec}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	latest, err := stores[0].Revision(t.Context(), "team/web", 0)
	if err != nil {
		t.Fatal(err)
	}
	if latest.Number != 100 {
		t.Errorf("latest revision is %d, want 100", latest.Number)
	}
}

// BenchmarkFinishComponentRun measures recording one component run with a
// state of three outputs, one sensitive.
func BenchmarkFinishComponentRun(b *testing.B) {
	ctx := context.Background()
	s := openT(b, b.TempDir())
	if err := s.CreateRun(ctx, store.Run{ID: "r1", Env: "team/web", Status: store.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AcquireLock(ctx, store.Lock{Env: "team/web", RunID: "r1"}, time.Hour, nil); err != nil {
		b.Fatal(err)
	}
	state := &store.ComponentState{Status: "applied", Outputs: map[string]store.OutputValue{
		"host":     {Value: []byte(`"db.internal"`)},
		"port":     {Value: []byte(`5432`)},
		"password": {Value: []byte(`"hunter2"`), Sensitive: true},
	}}
	for b.Loop() {
		cr := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply"}
		if err := s.StartComponentRun(ctx, cr); err != nil {
			b.Fatal(err)
		}
		cr.Status = string(store.StatusSucceeded)
		if err := s.FinishComponentRun(ctx, *cr, state); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComponentStates1000 measures reading the states of an
// environment of 1,000 components with three outputs each, one sensitive:
// what every run reads when it begins.
func BenchmarkComponentStates1000(b *testing.B) {
	ctx := context.Background()
	s := openT(b, b.TempDir())
	for i := range 1000 {
		st := store.ComponentState{Env: "team/web", Component: fmt.Sprintf("c%04d", i), Status: "applied", Outputs: map[string]store.OutputValue{
			"host":     {Value: []byte(`"db.internal"`)},
			"port":     {Value: []byte(`5432`)},
			"password": {Value: []byte(`"hunter2"`), Sensitive: true},
		}}
		if err := s.PutComponentState(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		states, err := s.ComponentStates(ctx, "team/web")
		if err != nil || len(states) != 1000 {
			b.Fatal(len(states), err)
		}
	}
}

// TestTransactionsHoldingEveryConnectionStillRunNewQueries: a query a
// transaction runs for the first time is not prepared through the pool
// (which would need a second connection) while every connection is held
// by such a transaction; it runs, and is cached afterwards.
func TestTransactionsHoldingEveryConnectionStillRunNewQueries(t *testing.T) {
	s := openT(t, t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var inside sync.WaitGroup
	inside.Add(maxConns)
	errs := make(chan error, maxConns)
	for i := range maxConns {
		go func() {
			errs <- s.read(ctx, func(tx *txn) error {
				inside.Done()
				inside.Wait() // every connection is now held by a transaction
				var n int
				return tx.QueryRowContext(ctx, fmt.Sprintf("SELECT %d + count(*) FROM environments", i)).Scan(&n)
			})
		}()
	}
	for range maxConns {
		if err := <-errs; err != nil {
			t.Fatalf("a transaction's new query: %v", err)
		}
	}
	if st, _ := s.q.cached("SELECT 0 + count(*) FROM environments"); st == nil {
		t.Error("the query was not cached after its transaction")
	}
}

// TestOpeningAnUpToDateStoreWritesNothing: knit opens the store at every
// command; with a schema that is current it must not need the write lock,
// which a server's writer may be holding.
func TestOpeningAnUpToDateStoreWritesNothing(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir).Close()
	other, err := sql.Open("sqlite", dsn(filepath.Join(dir, DBFile)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil { // another writer holds the lock
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	// A hang guard: a store that waited for the write lock would wait
	// until the other writer ends (never) and fail here.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatalf("opening while another process writes: %v", err)
	}
	s.Close()
}
