package riverqueue_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller/queuetest"
	"knit.dev/knit/internal/controller/riverqueue"
	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/testtools/pgtest"
)

// lease is the tests' lock lease: short, so a crashed run is stranded soon.
const lease = 2 * time.Second

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// harness is a River queue over a fresh database of cluster pg, with its
// library on the PostgreSQL store; Start runs it and the leader's Reap.
func harness(t *testing.T, pg *pgtest.Cluster, s queuetest.Setup) (queuetest.Harness, *riverqueue.Queue) {
	return replica(t, pg.DB(t), t.TempDir(), s)
}

// replica is a River queue over database dsn, with its library's data
// dir in dir (another replica of the same database: a copy of the
// first's key there).
func replica(t *testing.T, dsn, dir string, s queuetest.Setup) (queuetest.Harness, *riverqueue.Queue) {
	ctx := context.Background()
	key, err := keyfile.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.OpenWith(ctx, dsn, key, postgres.Options{ExtraConns: riverqueue.Conns(s.Max)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir, Store: st, CloseStore: true, LockLease: lease,
		Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{Hook: s.Hook}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	q, err := riverqueue.Open(ctx, st.Pool(), k, riverqueue.Config{Max: s.Max, Actor: "knit-serve", Logger: quiet, Lease: lease,
		LockRetry: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return queuetest.Harness{Queue: q, Knit: k, Store: st, Start: func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, 2)
		go func() {
			defer func() { done <- struct{}{} }()
			if err := q.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			_ = q.Reap(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			for range 2 {
				select {
				case <-done:
				case <-time.After(time.Minute):
					t.Error("the queue did not stop")
				}
			}
		})
	}}, q
}

// TestConformance: River's queue on PostgreSQL passes the queue port's
// suite.
func TestConformance(t *testing.T) {
	pg := pgtest.Start(t)
	queuetest.Run(t, func(t *testing.T, s queuetest.Setup) queuetest.Harness {
		h, _ := harness(t, pg, s)
		return h
	})
}
