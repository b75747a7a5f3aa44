package runqueue_test

import (
	"context"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller/queuetest"
	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/sqlite"
)

// TestConformance: the in-process queue on SQLite passes the queue port's
// suite; Start resumes what a crash left (Resume), then runs the queue.
func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, s queuetest.Setup) queuetest.Harness {
		dir := t.TempDir()
		st, err := sqlite.Open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		k, err := adapters.Open(context.Background(), adapters.Config{Config: knit.Config{DataDir: dir, Store: st, CloseStore: true,
			Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{Hook: s.Hook}}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		q := runqueue.New(k, runqueue.Config{Max: s.Max, Actor: "knit-serve", Logger: quiet})
		return queuetest.Harness{Queue: q, Knit: k, Store: st, Start: func(t *testing.T) {
			if err := q.Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			stop := run(t, q)
			t.Cleanup(stop)
		}}
	})
}
