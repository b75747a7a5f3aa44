// Package sqlite implements store.Store on an SQLite database file
// (modernc.org/sqlite, no cgo) in knit's data directory.
//
// The database runs in WAL mode so readers never wait for the writer. Every
// method that changes state is one BEGIN IMMEDIATE transaction: it takes the
// write lock up front, so two writers never deadlock upgrading from a read
// lock. Within one process writes are also queued on a semaphore, so they
// wait in Go rather than in SQLite's busy handler; across processes the busy
// timeout does the waiting. Sensitive outputs are sealed with AES-256-GCM
// under the key in knit.key next to the database (package keyfile).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/store"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// File names inside the data directory.
const (
	DBFile  = "knit.db"
	KeyFile = keyfile.Name
)

// maxConns bounds the connection pool (readers; writes are one at a time).
// Each connection has a page cache of its own: a few connections with
// bigger caches read far fewer pages from the file than many with small
// ones, for the same memory (maxConns × cacheKiB, 32 MiB), and a server on
// a few cores never has more queries running at once.
const (
	maxConns = 4
	cacheKiB = 8192
)

// busyTimeout is how long a statement waits for another process's write
// transaction before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Store is a store.Store backed by SQLite. It is safe for concurrent use,
// also by several processes sharing one data directory.
type Store struct {
	db *sql.DB
	q  *stmts // reads through cached prepared statements
	// versionConn is the connection Version asks (see there).
	versionMu   sync.Mutex
	versionConn *sql.Conn
	sealer      *keyfile.Sealer
	// writes holds one token; a writer takes it for the length of its
	// transaction.
	writes chan struct{}
	// clock is the store's time: it judges lock leases and stamps records
	// given no time. Tests replace it with SetClock.
	clock atomic.Pointer[func() time.Time]
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database in dataDir and brings its
// schema up to date. dataDir is created with mode 0700 and knit.db with
// 0600; the encryption key knit.key is read, or created on first use. Open
// fails with ErrSchemaNewer when the database was written by a newer knit.
func Open(ctx context.Context, dataDir string) (*Store, error) {
	return OpenKey(ctx, dataDir, nil)
}

// OpenKey is Open with knit's key already read (keyfile.Load of dataDir),
// so that a process reads it once; nil: Open reads it.
func OpenKey(ctx context.Context, dataDir string, key []byte) (*Store, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dataDir, DBFile)
	// Create the file ourselves so it is private: SQLite would use 0644, and
	// the WAL and shared-memory files inherit the database file's mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	f.Close()
	if key == nil {
		var err error
		if key, err = keyfile.Load(dataDir); err != nil {
			return nil, err
		}
	}
	sl, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	// Keep the connections open: a new one re-opens the file and re-runs
	// the pragmas, which under a server's load costs more than the query.
	// WAL lets any number of readers run beside the one writer.
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{db: db, q: &stmts{db: db}, sealer: sl, writes: make(chan struct{}, 1)}
	s.SetClock(time.Now)
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return s, nil
}

// dsn is the driver's connection string for the database file at path:
// the pragmas every connection needs and BEGIN IMMEDIATE for write
// transactions.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	// In WAL mode NORMAL syncs at checkpoints, not at every commit: a
	// commit survives any crash of the process (kill -9, panic) and the
	// database is never corrupted; only an OS crash or power loss may
	// roll back the last commits, as it may the tools' own state files,
	// which they do not sync either. FULL cost a component run about
	// 0.5 ms per write (BenchmarkFinishComponentRun 0.75 ms, now 0.2 ms).
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", cacheKiB))
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// SetClock makes now the store's clock, which judges lock leases (when
// they were acquired, when they expire) and stamps records given no time.
// Open sets time.Now; tests set a fake one to move time. It is safe to call
// while the store is in use; now must be safe for concurrent use.
func (s *Store) SetClock(now func() time.Time) { s.clock.Store(&now) }

// now is the time by the store's clock.
func (s *Store) now() time.Time { return (*s.clock.Load())() }

// Close closes the database. Calls after Close fail.
func (s *Store) Close() error {
	s.versionMu.Lock()
	if s.versionConn != nil {
		s.versionConn.Close()
	}
	s.versionMu.Unlock()
	s.q.close()
	return s.db.Close()
}

// write runs fn in one write transaction, committing if fn returns nil.
func (s *Store) write(ctx context.Context, fn func(tx *txn) error) error {
	var tx *txn
	defer func() { // once the connection and the write slot are free
		if tx != nil {
			s.q.warm(ctx, tx.missing)
		}
	}()
	select {
	case s.writes <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writes }()
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx = &txn{Tx: sqlTx, q: s.q}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// read runs fn in one read transaction, a consistent snapshot that never
// blocks or is blocked by the writer.
func (s *Store) read(ctx context.Context, fn func(tx *txn) error) error {
	sqlTx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &txn{Tx: sqlTx, q: s.q}
	defer func() {
		sqlTx.Rollback()
		s.q.warm(ctx, tx.missing)
	}()
	return fn(tx)
}

// notFound turns sql.ErrNoRows into store.ErrNotFound wrapped with what.
func notFound(err error, what string, args ...any) error {
	msg := fmt.Sprintf(what, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", msg, store.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// timeLayout is fixed-width so stored times sort as text in time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// ts is t as stored: UTC text, or NULL for the zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeLayout)
}

// timeCol scans a column written by ts into t.
type timeCol struct{ t *time.Time }

// Scan implements sql.Scanner.
func (c timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.t = time.Time{}
		return nil
	case string:
		t, err := parseTime(v)
		*c.t = t
		return err
	case []byte:
		t, err := parseTime(string(v))
		*c.t = t
		return err
	}
	return fmt.Errorf("time column holds %T", src)
}

// parseTime reads a time written by ts. The layout is fixed-width, so the
// fields are read by position: a page of rows holds hundreds of times, and
// time.Parse costs several times more.
func parseTime(s string) (time.Time, error) {
	if len(s) != len(timeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
		s[19] != '.' || s[29] != 'Z' {
		return time.Parse(timeLayout, s)
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			d := s[i] - '0'
			if d > 9 {
				return -1
			}
			n = n*10 + int(d)
		}
		return n
	}
	y, mo, d, h, mi, sec, ns := num(0, 4), num(5, 7), num(8, 10), num(11, 13), num(14, 16), num(17, 19), num(20, 29)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 || ns < 0 {
		return time.Parse(timeLayout, s) // its error says what is wrong
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)
	if t.Day() != d {
		return time.Parse(timeLayout, s) // a day the month does not have
	}
	return t, nil
}

// Version implements store.Store: SQLite's data_version, read on a
// connection of its own that never writes, so it changes whenever any
// connection, of this process or another, commits.
func (s *Store) Version(ctx context.Context) (int64, error) {
	s.versionMu.Lock()
	defer s.versionMu.Unlock()
	if s.versionConn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		s.versionConn = c
	}
	var v int64
	if err := s.versionConn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		s.versionConn.Close()
		s.versionConn = nil
		return 0, fmt.Errorf("data version: %w", err)
	}
	return v, nil
}

// nullStr scans a text column that may be NULL (a LEFT JOIN's missing
// row) into a string, NULL as "".
type nullStr struct{ s *string }

// Scan implements sql.Scanner.
func (c nullStr) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.s = ""
	case string:
		*c.s = v
	case []byte:
		*c.s = string(v)
	default:
		return fmt.Errorf("text column holds %T", src)
	}
	return nil
}

// nullInt64 scans an integer column that may be NULL into an int64, NULL
// as 0.
type nullInt64 struct{ n *int64 }

// Scan implements sql.Scanner.
func (c nullInt64) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.n = 0
	case int64:
		*c.n = v
	default:
		return fmt.Errorf("integer column holds %T", src)
	}
	return nil
}

// nullInt is nullInt64 for an int.
type nullInt struct{ n *int }

// Scan implements sql.Scanner.
func (c nullInt) Scan(src any) error {
	var n int64
	if err := (nullInt64{&n}).Scan(src); err != nil {
		return err
	}
	*c.n = int(n)
	return nil
}
