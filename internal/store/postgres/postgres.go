// Package postgres implements store.Store on a PostgreSQL database (pgx v5),
// for several knit replicas sharing one store.
//
// Every method that changes state is one SERIALIZABLE transaction, retried
// when PostgreSQL aborts it for a conflict with another (40001, 40P01): the
// outcome is as if the writes ran one at a time, the guarantee the SQLite
// store gets from its single writer, so the same checks (a lock's holder, an
// approval's status) hold across replicas. Lock leases are judged by the
// database's clock, shared by every replica, unless a test sets one
// (SetClock). Sensitive outputs are sealed with AES-256-GCM in this process
// (keyfile.Sealer) before they reach the database, so neither it nor a dump
// of it ever holds them in clear; the key comes from the caller.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/store"
)

// Store is a store.Store backed by PostgreSQL. It is safe for concurrent
// use, also by several processes (replicas) sharing one database.
type Store struct {
	pool   *pgxpool.Pool
	sealer *keyfile.Sealer
	// clock, when set, is the store's time in place of the database's
	// (tests move it).
	clock atomic.Pointer[func() time.Time]
}

var _ store.Store = (*Store)(nil)

// Open connects to the database dsn names (a postgres:// URL or key=value
// string) and brings its schema up to date. key is knit's key
// (keyfile.Load): every replica must be given the same one, or none can read
// the others' sensitive outputs. Open fails with ErrSchemaNewer when the
// database was written by a newer knit. Errors never quote dsn, which may
// hold a password.
func Open(ctx context.Context, dsn string, key []byte) (*Store, error) {
	return OpenWith(ctx, dsn, key, Options{})
}

// Options are how OpenWith sizes the store's connection pool.
type Options struct {
	// ExtraConns raises the pool's bound (the DSN's pool_max_conns, else
	// pgx's default) by as many connections: those of the run queue
	// (internal/controller/riverqueue) that shares the pool (Pool).
	ExtraConns int32
}

// OpenWith is Open with the pool sized by opts.
func OpenWith(ctx context.Context, dsn string, key []byte, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres store: the connection string does not parse (%s)", Redact(dsn))
	}
	cfg.MaxConns += max(opts.ExtraConns, 0)
	sl, err := keyfile.PostgresStore.Sealer(keyfile.PostgresStore.Key(key))
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "knit"
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: %w", Redact(dsn), err)
	}
	s := &Store{pool: pool, sealer: sl}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store %s: %w", Redact(dsn), err)
	}
	return s, nil
}

// Redact is dsn without its password, fit for a log or an error: the host,
// port and database, which say which store is meant.
func Redact(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		if u, uerr := url.Parse(dsn); uerr == nil && u.Host != "" {
			return u.Redacted() // never the password, even unparsed
		}
		return "(unparsable connection string)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// SetClock makes now the store's clock in place of the database's: it
// judges lock leases and stamps records given no time. Tests set a fake one
// to move time; it is safe to call while the store is in use.
func (s *Store) SetClock(now func() time.Time) { s.clock.Store(&now) }

// now is the store's time: the clock SetClock set, else the database's.
func (s *Store) now(ctx context.Context, q querier) (time.Time, error) {
	if c := s.clock.Load(); c != nil {
		return (*c)(), nil
	}
	var t time.Time
	if err := q.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return t.UTC(), nil
}

// Pool is the store's connection pool, handed to the run queue
// (internal/controller/riverqueue), whose tables this store's migrations
// create, so that one process keeps one pool on the database. The queue
// reads and writes its own tables and River's through it; the store's
// records stay behind store.Store.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// querier is what the pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// maxAttempts bounds the retries of a write PostgreSQL aborted for a
// conflict; each conflict means another write committed, so the writes as a
// whole always progress.
const maxAttempts = 100

// write runs fn in one serializable transaction, committing if fn returns
// nil, and runs it again from the start when PostgreSQL aborts it for a
// conflict with a concurrent transaction: fn must set its results afresh
// on each call.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, fn)
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		// A short random pause spreads the losers of a conflict apart.
		pause := time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt, 20))))
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// retryable reports whether err is PostgreSQL aborting a transaction for a
// conflict: a serialization failure or a deadlock.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// read runs fn in one read-only transaction, a consistent snapshot.
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// notFound turns pgx.ErrNoRows into store.ErrNotFound wrapped with what.
func notFound(err error, what string, args ...any) error {
	msg := fmt.Sprintf(what, args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", msg, store.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// affected checks that an UPDATE or DELETE touched a row, returning
// store.ErrNotFound if it did not.
func affected(tag pgconn.CommandTag, err error, what string, args ...any) error {
	if err != nil {
		return fmt.Errorf("%s: %w", fmt.Sprintf(what, args...), err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(pgx.ErrNoRows, what, args...)
	}
	return nil
}

// ts is t as stored: nanoseconds since the Unix epoch, or NULL for the zero
// time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// timeCol scans a column written by ts into t.
type timeCol struct{ t *time.Time }

// Scan implements sql.Scanner, which pgx honours.
func (c timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.t = time.Time{}
	case int64:
		*c.t = time.Unix(0, v).UTC()
	default:
		return fmt.Errorf("time column holds %T", src)
	}
	return nil
}

// Version implements store.Store: a hash of the database's current
// snapshot (the transactions running and the next to start). Any commit,
// by any replica, changes it: a transaction that committed since the last
// call was either running then (it has left the running set since) or had
// not started (the next-to-start mark has passed it). Read-only work
// leaves it alone.
func (s *Store) Version(ctx context.Context) (int64, error) {
	var snap string
	if err := s.pool.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		return 0, fmt.Errorf("data version: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte(snap))
	return int64(h.Sum64() >> 1), nil
}

// orEmpty is b, or an empty value for nil (the column is NOT NULL).
func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// limitClause is " LIMIT n" for n > 0, else nothing (no limit).
func limitClause(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" LIMIT %d", n)
}

// args builds a query's WHERE conditions with numbered parameters.
type args struct {
	where []string
	vals  []any
}

// add appends cond with each "?" replaced by the number of the next
// parameter, vals in order.
func (a *args) add(cond string, vals ...any) {
	for _, v := range vals {
		a.vals = append(a.vals, v)
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(a.vals)), 1)
	}
	a.where = append(a.where, cond)
}

// envOfTeams keeps rows whose environment ID column (team/env) names an
// environment of one of teams.
func (a *args) envOfTeams(col string, teams []string) {
	prefixes := make([]string, len(teams))
	for i, t := range teams {
		prefixes[i] = t + "/"
	}
	a.vals = append(a.vals, prefixes)
	a.where = append(a.where, fmt.Sprintf("EXISTS (SELECT 1 FROM unnest($%d::text[]) p WHERE starts_with(%s, p))", len(a.vals), col))
}

// clause is " WHERE …" of the conditions, or nothing.
func (a *args) clause() string {
	if len(a.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(a.where, " AND ")
}

// queryAll runs query and scans every row with scan; what names the list
// in errors ("list approvals: …").
func queryAll[T any](ctx context.Context, q querier, what string, scan func(pgx.Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
