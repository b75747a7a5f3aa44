package postgres_test

import (
	"bytes"
	"testing"
	"time"

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
