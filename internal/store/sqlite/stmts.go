package sqlite

import (
	"context"
	"database/sql"
	"strconv"
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= maxStmts {
		return nil, nil // the caller runs the query unprepared
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
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
// every call.
type txn struct {
	*sql.Tx
	q *stmts
}

// stmt is query's cached statement bound to the transaction, or nil when
// the cache is full.
func (t *txn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := t.q.get(ctx, query)
	if st == nil || err != nil {
		return nil, err
	}
	return t.Tx.StmtContext(ctx, st), nil
}

func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return t.Tx.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return t.Tx.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if st == nil || err != nil {
		return t.Tx.QueryRowContext(ctx, query, args...) // reports a failure to prepare on Scan
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
