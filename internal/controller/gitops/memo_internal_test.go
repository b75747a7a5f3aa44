package gitops

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/store"
)

// countingStore counts the reads and writes of settings and leases, and
// the reads of revisions.
type countingStore struct {
	store.Store
	reads, writes, leases, revisions atomic.Int64
}

func (s *countingStore) Revisions(ctx context.Context, env string, f store.RevisionFilter) ([]store.Revision, error) {
	s.revisions.Add(1)
	return s.Store.Revisions(ctx, env, f)
}

func (s *countingStore) Setting(ctx context.Context, key string) (string, error) {
	s.reads.Add(1)
	return s.Store.Setting(ctx, key)
}

func (s *countingStore) Settings(ctx context.Context, prefix string) (map[string]string, error) {
	s.reads.Add(1)
	return s.Store.Settings(ctx, prefix)
}

func (s *countingStore) SetSettings(ctx context.Context, kv map[string]string) error {
	s.writes.Add(1)
	return s.Store.SetSettings(ctx, kv)
}

func (s *countingStore) AcquireLock(ctx context.Context, l store.Lock, ttl time.Duration, dead func(store.Lock) bool) (store.Lock, error) {
	s.leases.Add(1)
	return s.Store.AcquireLock(ctx, l, ttl, dead)
}

func TestAnIdlePollReadsNoStoreRow(t *testing.T) {
	cs := &countingStore{}
	f := newFleetOn(t, 20, func(s store.Store) store.Store { cs.Store = s; return cs })
	cs.reads.Store(0)
	cs.writes.Store(0)
	for range 3 {
		f.loop()
	}
	if r, w := cs.reads.Load(), cs.writes.Load(); r != 0 || w != 0 {
		t.Errorf("3 polls that found the branch where it was read settings %d times and wrote them %d times; want none", r, w)
	}
	// A new commit is still seen, recorded and started, without asking
	// the store whether its run started already: this server wrote it.
	f.commitOne()
	started := f.q.n
	cs.revisions.Store(0)
	f.loop()
	if f.q.n != started+1 {
		t.Fatalf("the commit changing one file started %d runs, want 1", f.q.n-started)
	}
	if n := cs.revisions.Load(); n != 0 {
		t.Errorf("starting the run of a want this server wrote read revisions %d times; want none", n)
	}
	f.settle(started + 1)
	cs.reads.Store(0)
	f.loop()
	if r := cs.reads.Load(); r != 0 {
		t.Errorf("the poll after a commit read settings %d times; want none", r)
	}
}

func TestTheLeaseIsRenewedOnlyWhenDue(t *testing.T) {
	cs := &countingStore{}
	f := newFleetOn(t, 1, func(s store.Store) store.Store { cs.Store = s; return cs })
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	f.g.clock = fake
	l := newGitLease(f.g)
	if !l.current(t.Context()) || !l.current(t.Context()) {
		t.Fatal("the lease is not held")
	}
	if n := cs.leases.Load(); n != 1 {
		t.Errorf("two polls in a row took or renewed the lease %d times, want 1", n)
	}
	fake.Advance(l.every())
	if !l.current(t.Context()) || cs.leases.Load() != 2 {
		t.Errorf("a poll once the renewal is due renewed the lease %d times in all, want 2", cs.leases.Load())
	}
}
