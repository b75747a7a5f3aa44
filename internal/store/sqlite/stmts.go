package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
)

// stmts caches prepared statements by their text: SQLite spends most of a
// small query's time parsing and planning it, and the API server runs the
// same few dozen queries thousands of times a second. database/sql keeps
// each statement prepared on every connection it has run on.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxStmts bounds the cache; queries built from filters have few shapes.
// Beyond it a query runs unprepared.
const maxStmts = 256

func (c *stmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, full := c.cached(query); st != nil || full {
		return st, nil // nil when full: the caller runs the query unprepared
	}
	// Prepared without holding mu: preparing takes a connection from the
	// pool, and a transaction holding one may be waiting for mu.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[query]; ok {
		st.Close()
		return old, nil
	}
	if len(c.m) >= maxStmts {
		st.Close()
		return nil, nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

// cached is query's statement if the cache has it, and whether the cache
// is full.
func (c *stmts) cached(query string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query], len(c.m) >= maxStmts
}

// warm prepares queries a transaction ran unprepared, once it has given
// its connection back. A failure only leaves a query unprepared: it ran.
func (c *stmts) warm(ctx context.Context, queries []string) {
	for _, q := range queries {
		_, _ = c.get(ctx, q)
	}
}

// QueryContext runs a cached statement outside any transaction.
func (c *stmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return c.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a cached statement for one row. A failure to
// prepare surfaces from Scan, as with sql.DB.
func (c *stmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.get(ctx, query)
	if st == nil || err != nil {
		return c.db.QueryRowContext(ctx, query, args...) // reports a failure to prepare on Scan
	}
	return st.QueryRowContext(ctx, args...)
}

// txn is a transaction whose statements come from the cache: a write
// transaction's INSERT or UPDATE is parsed once per connection, not on
// every call. A statement not yet cached runs unprepared and is noted in
// missing, for the cache to prepare after the transaction: preparing
// inside it would take a second connection while holding one, which
// deadlocks when every connection is held that way.
type txn struct {
	*sql.Tx
	q       *stmts
	missing []string
}

// stmt is query's cached statement bound to the transaction, or nil.
func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	st, full := t.q.cached(query)
	if st == nil {
		if !full {
			t.missing = append(t.missing, query)
		}
		return nil
	}
	return t.Tx.StmtContext(ctx, st)
}

// prepare is query's statement for this transaction: the cached one, or
// one prepared on the transaction's own connection (closed with it), for a
// query the transaction runs many times.
func (t *txn) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st, nil
	}
	return t.Tx.PrepareContext(ctx, query)
}

func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st := t.stmt(ctx, query)
	if st == nil {
		return t.Tx.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st := t.stmt(ctx, query)
	if st == nil {
		return t.Tx.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st := t.stmt(ctx, query)
	if st == nil {
		return t.Tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// limitClause is " LIMIT n" for n > 0, else nothing (no limit). The number
// is written into the statement rather than bound: SQLite's planner reads a
// bound LIMIT's value, which expires the prepared statement each time a new
// value is bound, so every run parsed it again. Limits take few values (a
// page size plus one), so the statements stay few.
func limitClause(n int) string {
	if n <= 0 {
		return ""
	}
	return " LIMIT " + strconv.Itoa(n)
}

func (c *stmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// teamsIn is the condition that keeps rows whose team column is one of
// teams (at least one).
func teamsIn(col string, teams []string) (string, []any) {
	args := make([]any, len(teams))
	for i, t := range teams {
		args[i] = t
	}
	return col + " IN (?" + strings.Repeat(", ?", len(teams)-1) + ")", args
}

// envOfTeams is the condition that keeps rows whose environment ID column
// (team/env) names an environment of one of teams (at least one). An ID
// of team t sorts in [t+"/", t+"0"), '0' following '/', so each is a
// range an index on the column serves.
func envOfTeams(col string, teams []string) (string, []any) {
	conds := make([]string, len(teams))
	args := make([]any, 0, 2*len(teams))
	for i, t := range teams {
		conds[i] = "(" + col + " >= ? AND " + col + " < ?)"
		args = append(args, t+"/", t+"0")
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}
