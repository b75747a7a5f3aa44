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
const maxStmts = 256

func (c *stmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	if len(c.m) < maxStmts {
		c.m[query] = st
	}
	return st, nil
}

// QueryContext runs a cached statement outside any transaction.
func (c *stmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a cached statement for one row. A failure to
// prepare surfaces from Scan, as with sql.DB.
func (c *stmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.get(ctx, query)
	if err != nil {
		return c.db.QueryRowContext(ctx, query, args...) // reports the same error on Scan
	}
	return st.QueryRowContext(ctx, args...)
}

// inTx runs a cached statement inside tx.
func (c *stmts) inTx(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
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
