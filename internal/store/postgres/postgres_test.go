package postgres_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/storetest"
	"knit.dev/knit/internal/testtools/pgtest"
)

// testKey is knit's key in these tests.
var testKey = bytes.Repeat([]byte{7}, 32)

func open(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn, testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store suite the SQLite store passes, each test
// on a database of its own in one throwaway cluster.
func TestConformance(t *testing.T) {
	c := pgtest.Start(t)
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		s := open(t, c.DB(t))
		s.SetClock(now)
		return s
	})
}

// TestReplicas: what several replicas on one database rely on. Each
// subtest has a database of its own in one cluster.
func TestReplicas(t *testing.T) {
	c := pgtest.Start(t)

	// Replicas starting at once apply each migration exactly once.
	t.Run("MigrationsOnce", func(t *testing.T) {
		dsn := c.DB(t)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				s, err := postgres.Open(t.Context(), dsn, testKey)
				if err == nil {
					s.Close()
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		var n, max int
		db := conn(t, dsn)
		if err := db.QueryRow(t.Context(), `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		if n != postgres.Migrations() || max != postgres.Migrations() {
			t.Errorf("schema_migrations holds %d rows up to %d, want 1..%d", n, max, postgres.Migrations())
		}
	})

	// A database a newer knit migrated is refused, naming its version.
	t.Run("NewerSchemaRefused", func(t *testing.T) {
		dsn := c.DB(t)
		open(t, dsn)
		if _, err := conn(t, dsn).Exec(t.Context(), `INSERT INTO schema_migrations VALUES (999, 0)`); err != nil {
			t.Fatal(err)
		}
		_, err := postgres.Open(t.Context(), dsn, testKey)
		if !errors.Is(err, postgres.ErrSchemaNewer) || !strings.Contains(err.Error(), "999") {
			t.Fatalf("opening a version-999 database: err = %v, want ErrSchemaNewer naming 999", err)
		}
	})

	// Of runs on several replicas racing for one environment's lock,
	// exactly one gets it.
	t.Run("OneLockAcrossReplicas", func(t *testing.T) {
		dsn := c.DB(t)
		replicas := []*postgres.Store{open(t, dsn), open(t, dsn), open(t, dsn)}
		var wg sync.WaitGroup
		var won atomic.Int64
		errs := make(chan error, 30)
		for i := range 30 {
			wg.Go(func() {
				l := store.Lock{Env: "team/web", RunID: fmt.Sprintf("run-%d", i), Owner: "o", Host: "h", PID: i}
				_, err := replicas[i%len(replicas)].AcquireLock(t.Context(), l, time.Hour, nil)
				var le *store.LockedError
				switch {
				case err == nil:
					won.Add(1)
				case !errors.As(err, &le):
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if won.Load() != 1 {
			t.Errorf("%d runs hold the lock, want 1", won.Load())
		}
	})

	// With no clock set, the database's judges leases: every replica
	// shares it, whatever the replicas' own clocks say.
	t.Run("DatabaseClock", func(t *testing.T) {
		// The database's clock is made to read a fixed time far from
		// this process's: a clock_timestamp() of a schema searched
		// before pg_catalog shadows the built-in one for the store's
		// sessions.
		dsn := c.DB(t)
		db := conn(t, dsn)
		dbTime := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
		if _, err := db.Exec(t.Context(), `CREATE SCHEMA faketime;
			CREATE TABLE faketime.now (t timestamptz NOT NULL);
			INSERT INTO faketime.now VALUES ('`+dbTime.Format(time.RFC3339)+`');
			CREATE OR REPLACE FUNCTION faketime.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT t FROM faketime.now $$;`); err != nil {
			t.Fatal(err)
		}
		s := open(t, dsn+"&search_path="+url.QueryEscape("public,faketime,pg_catalog"))
		l, err := s.AcquireLock(t.Context(), store.Lock{Env: "team/web", RunID: "r1"}, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Acquired.Equal(dbTime) || !l.Expires.Equal(dbTime.Add(time.Hour)) {
			t.Errorf("lease %v–%v, want the database's clock: %v for an hour", l.Acquired, l.Expires, dbTime)
		}
		// The lease ends when the database's clock says so.
		wantLocked(t, s, "r2")
		if _, err := db.Exec(t.Context(), `UPDATE faketime.now SET t = t + interval '1 hour'`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AcquireLock(t.Context(), store.Lock{Env: "team/web", RunID: "r2"}, time.Hour, nil); err != nil {
			t.Errorf("taking over a lease the database's clock says ended: %v", err)
		}
	})

	// A sensitive output is sealed before it reaches the database: a
	// dump of it does not hold the value, and a replica with another key
	// cannot read it.
	t.Run("SealedOutputs", func(t *testing.T) {
		dsn := c.DB(t)
		s := open(t, dsn)
		secret := "hunter2-" + strings.Repeat("x", 8)
		err := s.PutComponentState(t.Context(), store.ComponentState{Env: "team/web", Component: "db", Status: "applied",
			Outputs: map[string]store.OutputValue{"password": {Value: []byte(`"` + secret + `"`), Sensitive: true},
				"host": {Value: []byte(`"db.internal"`)}}})
		if err != nil {
			t.Fatal(err)
		}
		// pg_dump writes bytea as hex: look for the value in both forms.
		dump := string(c.Dump(t, pgtest.DBName(t, dsn)))
		if !strings.Contains(dump, hex.EncodeToString([]byte("db.internal"))) {
			t.Fatal("the dump lacks the plain output: the test looks in the wrong place")
		}
		if strings.Contains(dump, secret) || strings.Contains(dump, hex.EncodeToString([]byte(secret))) {
			t.Error("pg_dump holds the sensitive output in clear")
		}
		other, err := postgres.Open(t.Context(), dsn, bytes.Repeat([]byte{8}, 32))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := other.ComponentStates(t.Context(), "team/web"); err == nil {
			t.Error("a store with another key read the sensitive output")
		}
	})

	// Version changes when any replica commits. (It may also change
	// without a write of knit's: PostgreSQL's own work, autoanalyze say,
	// commits too; readers then read once more.)
	t.Run("Version", func(t *testing.T) {
		dsn := c.DB(t)
		a, b := open(t, dsn), open(t, dsn)
		v1, err := a.Version(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetSetting(t.Context(), "k", "v"); err != nil {
			t.Fatal(err)
		}
		if v3, err := a.Version(t.Context()); err != nil || v3 == v1 {
			t.Errorf("another replica's write left the version at %d (%v)", v3, err)
		}
	})

	// An error opening the store names the database, never the password.
	t.Run("ErrorsHideThePassword", func(t *testing.T) {
		dsn := c.DB(t)
		bad := strings.Replace(dsn, c.Password, "wrong-password-42", 1)
		_, err := postgres.Open(t.Context(), bad, testKey)
		if err == nil {
			t.Fatal("opened a store with a wrong password")
		}
		if strings.Contains(err.Error(), "wrong-password-42") || !strings.Contains(err.Error(), pgtest.DBName(t, dsn)) {
			t.Errorf("error %q: want the database named and no password", err)
		}
		if r := postgres.Redact("postgres://u:sekrit@[::1:bad/x"); strings.Contains(r, "sekrit") {
			t.Errorf("Redact of an unparsable URL shows its password: %s", r)
		}
	})
}

// wantLocked checks that run cannot take team/web's lock.
func wantLocked(t *testing.T, s store.Store, run string) {
	t.Helper()
	var le *store.LockedError
	if _, err := s.AcquireLock(t.Context(), store.Lock{Env: "team/web", RunID: run}, time.Hour, nil); !errors.As(err, &le) {
		t.Errorf("run %s acquiring a live lease: err = %v, want *store.LockedError", run, err)
	}
}

// conn is a plain connection to dsn, for looking behind the store's back.
func conn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
