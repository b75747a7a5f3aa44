package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

func testAudit(t *testing.T, s store.Store) {
	ctx := t.Context()
	events := []store.AuditEvent{
		{Env: "team/web", Actor: "alice", Action: "apply", Revision: 2, RunID: "r1", Reason: "ticket-1", Time: at(0)},
		{Env: "team/api", Actor: "bob", Action: "drift", Time: at(time.Second)},
		{Env: "team/web", Actor: "carol", Action: "approve", Component: "db", Detail: "looks fine", Time: at(2 * time.Second)},
	}
	for _, e := range events {
		must(t, s.AppendAudit(ctx, e))
	}
	all, err := s.Audit(ctx, store.AuditFilter{})
	must(t, err)
	web, err := s.Audit(ctx, store.AuditFilter{Env: "team/web"})
	must(t, err)
	if len(all) != 3 || len(web) != 2 {
		t.Fatalf("got %d events in all and %d for team/web, want 3 and 2", len(all), len(web))
	}
	for i := range all {
		if all[i].ID == 0 || (i > 0 && all[i].ID <= all[i-1].ID) {
			t.Errorf("event IDs not increasing: %d after %d", all[i].ID, all[max(i-1, 0)].ID)
		}
		all[i].ID = 0
	}
	equal(t, "all events, oldest first", all, events)
	equal(t, "team/web's actions", []string{web[0].Action, web[1].Action}, []string{"apply", "approve"})
	none, err := s.Audit(ctx, store.AuditFilter{Env: "team/none"})
	must(t, err)
	if len(none) != 0 {
		t.Errorf("events of an unknown env: %v", none)
	}
}

// testConcurrentWrites has writers and readers race; a store that lets
// "database is busy" or a lost update surface fails it.
func testConcurrentWrites(t *testing.T, s store.Store) {
	const workers, perWorker = 8, 50
	ctx := t.Context()
	must(t, s.CreateRun(ctx, run("r1", "team/web", at(0))))
	lockFor(t, s, "team/web", "r1")
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				if err := concurrentStep(ctx, s, w, i); err != nil {
					errs <- fmt.Errorf("worker %d step %d: %w", w, i, err)
					return
				}
			}
		})
		wg.Go(func() {
			for range perWorker / 5 {
				if _, err := s.ComponentStates(ctx, "team/web"); err != nil {
					errs <- fmt.Errorf("reader %d: %w", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	crs, err := s.ComponentRuns(ctx, "r1")
	must(t, err)
	events, err := s.Audit(ctx, store.AuditFilter{Env: "team/web"})
	must(t, err)
	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	if len(crs) != workers*perWorker || len(events) != workers*perWorker || len(states) != workers {
		t.Errorf("got %d component runs, %d events, %d states; want %d, %d, %d",
			len(crs), len(events), len(states), workers*perWorker, workers*perWorker, workers)
	}
	for _, st := range states {
		if st.Revision != perWorker-1 {
			t.Errorf("state of %s at revision %d, want the last write's %d", st.Component, st.Revision, perWorker-1)
		}
	}
}

func concurrentStep(ctx context.Context, s store.Store, w, i int) error {
	comp := fmt.Sprintf("c%d", w)
	cr := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: comp, Operation: "apply", Status: string(store.StatusRunning), StartedAt: at(0)}
	if err := s.StartComponentRun(ctx, cr); err != nil {
		return err
	}
	cr.Status, cr.FinishedAt = string(store.StatusSucceeded), at(time.Second)
	st := &store.ComponentState{Status: "applied", Revision: i, UpdatedAt: at(time.Second), Outputs: map[string]store.OutputValue{
		"n":      {Value: fmt.Appendf(nil, "%d", i)},
		"secret": {Value: []byte(`"s"`), Sensitive: true},
	}}
	if err := s.FinishComponentRun(ctx, *cr, st); err != nil {
		return err
	}
	return s.AppendAudit(ctx, store.AuditEvent{Env: "team/web", Actor: comp, Action: "apply", Component: comp, Time: at(time.Second)})
}
