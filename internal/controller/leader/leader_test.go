package leader

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// leases is the store's lease rule in memory: one holder per name until
// its lease ends; dead holders stop renewing.
type leases struct {
	mu      sync.Mutex
	holder  map[string]store.Lock
	expires map[string]time.Time
	dead    map[string]bool // by RunID: its calls fail, as a killed process makes none
}

func (l *leases) HoldLease(_ context.Context, h store.Lock, ttl time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead[h.RunID] {
		return errors.New("connection refused")
	}
	cur, ok := l.holder[h.Env]
	if ok && cur.RunID != h.RunID && time.Now().Before(l.expires[h.Env]) {
		return &store.LockedError{Holder: cur}
	}
	l.holder[h.Env], l.expires[h.Env] = h, time.Now().Add(ttl)
	return nil
}

func (l *leases) ReleaseLease(_ context.Context, name, runID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder[name].RunID == runID && !l.dead[runID] {
		delete(l.holder, name)
	}
	return nil
}

// TestOneLeadsAndAnotherTakesOverWhenItDies: of two electors on one
// lease, one leads; when it stops renewing (killed), the other leads, and
// the first's term has ended by then (it stepped down on its own).
func TestOneLeadsAndAnotherTakesOverWhenItDies(t *testing.T) {
	l := &leases{holder: map[string]store.Lock{}, expires: map[string]time.Time{}, dead: map[string]bool{}}
	const lease = 300 * time.Millisecond
	a, b := New(l, lease, "a", nil), New(l, lease, "b", nil)
	b.me.RunID += "-b" // two electors of one test process
	leading := make(chan string, 4)
	ended := make(chan string, 4)
	run := func(e *Elector, name string) {
		_ = e.Run(t.Context(), func(ctx context.Context) {
			leading <- name
			<-ctx.Done()
			ended <- name
		})
	}
	go run(a, "a")
	first := <-leading
	go run(b, "b")
	dying := a
	if first == "b" {
		dying = b
	}
	l.mu.Lock()
	l.dead[dying.me.RunID] = true
	l.mu.Unlock()
	select {
	case e := <-ended:
		if e != first {
			t.Fatalf("%s's term ended, want the dying %s's", e, first)
		}
	case <-time.After(time.Minute):
		t.Fatal("the leader that cannot renew never stepped down")
	}
	select {
	case next := <-leading:
		if next == first {
			t.Fatalf("%s led again though it is dead", next)
		}
	case <-time.After(time.Minute):
		t.Fatal("no other elector took over")
	}
}
