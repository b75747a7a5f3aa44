package riverqueue_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"knit.dev/knit/internal/controller/riverqueue"
	"knit.dev/knit/internal/testtools/pgtest"
)

// ddl matches a statement that changes a schema.
var ddl = regexp.MustCompile(`(?i)\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX|UNIQUE|TYPE|SCHEMA|SEQUENCE|FUNCTION|TRIGGER|VIEW|EXTENSION|MATERIALIZED|OR\s+REPLACE)\b`)

// TestNoDDL: the queue's tables are the PostgreSQL store's (its
// migrations create them, River's too): no string of the package's code
// creates, alters or drops anything.
func TestNoDDL(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && ddl.MatchString(lit.Value) {
				t.Errorf("%s: %s: DDL belongs in internal/store/postgres/migrations", fset.Position(lit.Pos()), ddl.FindString(lit.Value))
			}
			return true
		})
	}
	if _, err := os.Stat("db.go"); err != nil {
		t.Fatalf("the package's files moved (%v): check this test still reads them", err)
	}
}

// TestOpenRefusesADatabaseTheStoreDidNotMigrate: on a database without
// the store's tables the queue says what to do, and creates nothing.
func TestOpenRefusesADatabaseTheStoreDidNotMigrate(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Start(t).DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = riverqueue.Open(ctx, pool, nil, riverqueue.Config{Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "knit_run_events") || !strings.Contains(err.Error(), "migrat") {
		t.Fatalf("Open on an unmigrated database: %v, want an error naming the missing table and the store's migrations", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("Open created %d tables (%v), want none", n, err)
	}
}
