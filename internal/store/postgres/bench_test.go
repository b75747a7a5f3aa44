package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/testtools/pgtest"
)

// benchStore is a store on a throwaway cluster, for the benchmarks beside
// the SQLite store's of the same names.
func benchStore(b *testing.B) *postgres.Store {
	c := pgtest.Start(b)
	s, err := postgres.Open(context.Background(), c.DB(b), testKey)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchState is a component's state with three outputs, one sensitive.
func benchState() store.ComponentState {
	return store.ComponentState{Status: "applied", Outputs: map[string]store.OutputValue{
		"host":     {Value: []byte(`"db.internal"`)},
		"port":     {Value: []byte(`5432`)},
		"password": {Value: []byte(`"hunter2"`), Sensitive: true},
	}}
}

// BenchmarkFinishComponentRun measures recording one component run with
// its state: two serializable transactions.
func BenchmarkFinishComponentRun(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	if err := s.CreateRun(ctx, store.Run{ID: "r1", Env: "team/web", Status: store.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AcquireLock(ctx, store.Lock{Env: "team/web", RunID: "r1"}, time.Hour, nil); err != nil {
		b.Fatal(err)
	}
	state := benchState()
	for b.Loop() {
		cr := &store.ComponentRun{RunID: "r1", Env: "team/web", Component: "db", Operation: "apply"}
		if err := s.StartComponentRun(ctx, cr); err != nil {
			b.Fatal(err)
		}
		cr.Status = string(store.StatusSucceeded)
		if err := s.FinishComponentRun(ctx, *cr, &state); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComponentStates1000 measures reading the states of an
// environment of 1,000 components: what every run reads when it begins.
func BenchmarkComponentStates1000(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	for i := range 1000 {
		st := benchState()
		st.Env, st.Component = "team/web", fmt.Sprintf("c%04d", i)
		if err := s.PutComponentState(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		states, err := s.ComponentStates(ctx, "team/web")
		if err != nil || len(states) != 1000 {
			b.Fatal(len(states), err)
		}
	}
}
