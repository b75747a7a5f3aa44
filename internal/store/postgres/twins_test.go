package postgres_test

import (
	"os"
	"slices"
	"testing"
)

// TestMigrationsTwinSQLites: migration n makes the same change in each
// store, so both have the same files; a SQLite migration without its
// PostgreSQL twin (or the other way round) fails here, not at a
// `knit store migrate` that finds the schemas at different versions.
func TestMigrationsTwinSQLites(t *testing.T) {
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	if pg, lite := names("migrations"), names("../sqlite/migrations"); !slices.Equal(pg, lite) {
		t.Errorf("PostgreSQL migrations %v, SQLite's %v: write the twin of each", pg, lite)
	}
}
