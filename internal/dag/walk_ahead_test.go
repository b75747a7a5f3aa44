package dag

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// aheadLog records a WalkAhead's calls in the order they happened.
type aheadLog struct {
	mu     sync.Mutex
	events []string
}

func (l *aheadLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *aheadLog) index(e string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Index(l.events, e)
}

func TestWalkAheadPreparesWhileDependenciesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a will not finish until b has been prepared, nor b until c has:
		// a spare slot must prepare each while the one before runs, or the
		// walk never ends. Only the next link is prepared: c while b runs,
		// not while a does, though slots are free then too.
		g := build("a>b", "b>c")
		var log aheadLog
		var aDone atomic.Bool
		prepared := map[string]chan struct{}{"b": make(chan struct{}), "c": make(chan struct{})}
		res := g.WalkAhead(t.Context(), 4, func(_ context.Context, v string) {
			log.add("ahead " + v)
			if v == "c" && !aDone.Load() {
				t.Error("c was prepared while a ran, before b started")
			}
			close(prepared[v])
		}, func(_ context.Context, v string) error {
			log.add("run " + v)
			defer aDone.Store(v == "a" || aDone.Load())
			next := map[string]string{"a": "b", "b": "c"}[v]
			if next == "" {
				return nil
			}
			if err := await(prepared[next], next+" to be prepared"); err != nil {
				return err
			}
			time.Sleep(time.Second) // idle slots look for more to prepare
			return nil
		})
		checkAll(t, res, Succeeded)
		// a and b's preparation start at once, in either order, as do b
		// and c's.
		order := []string{"ahead b", "run b", "run c"}
		for i := 1; i < len(order); i++ {
			if log.index(order[i-1]) > log.index(order[i]) {
				t.Errorf("%q came after %q (calls %q)", order[i-1], order[i], log.events)
			}
		}
		if len(log.events) != 5 || log.index("run a") < 0 || log.index("ahead c") < 0 {
			t.Errorf("calls = %q, want a run of a, b and c and a preparation of b and c", log.events)
		}
	})
}

func TestWalkAheadStartsAVertexOnlyOnceItsPreparationReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// b becomes ready while its ahead call is still running; its fn
		// must wait for that call to return.
		g := build("a>b")
		aDone := make(chan struct{})
		var bPrepared atomic.Bool
		res := g.WalkAhead(t.Context(), 2, func(_ context.Context, v string) {
			if v != "b" {
				t.Errorf("ahead(%s): only b is ever not ready", v)
				return
			}
			<-aDone
			time.Sleep(time.Second) // a's outcome reaches the walker meanwhile
			bPrepared.Store(true)
		}, func(_ context.Context, v string) error {
			switch v {
			case "a":
				close(aDone)
			case "b":
				if !bPrepared.Load() {
					t.Error("b started before its ahead call returned")
				}
			}
			return nil
		})
		checkAll(t, res, Succeeded)
	})
}

func TestWalkAheadKeepsToParallelism(t *testing.T) {
	for _, parallelism := range []int{1, 2, 3, 4, 6} {
		synctest.Test(t, func(t *testing.T) {
			// Three chains: slots that chains leave idle prepare their
			// next links.
			g := New()
			for c := range 3 {
				for i := range 7 {
					g.Connect(fmt.Sprintf("c%d_%d", c, i), fmt.Sprintf("c%d_%d", c, i+1))
				}
			}
			var mu sync.Mutex
			inFlight, peak := 0, 0
			prepared, ran := map[string]int{}, map[string]bool{}
			enter := func() {
				mu.Lock()
				defer mu.Unlock()
				inFlight++
				peak = max(peak, inFlight)
			}
			leave := func() {
				mu.Lock()
				defer mu.Unlock()
				inFlight--
			}
			res := g.WalkAhead(t.Context(), parallelism, func(_ context.Context, v string) {
				enter()
				defer leave()
				mu.Lock()
				prepared[v]++
				if ran[v] {
					t.Errorf("ahead(%s) after its fn started", v)
				}
				mu.Unlock()
				time.Sleep(300 * time.Millisecond)
			}, func(_ context.Context, v string) error {
				enter()
				defer leave()
				mu.Lock()
				ran[v] = true
				mu.Unlock()
				time.Sleep(time.Second)
				return nil
			})
			checkAll(t, res, Succeeded)
			if peak > parallelism {
				t.Errorf("parallelism %d: %d calls at once", parallelism, peak)
			}
			if parallelism > 3 && len(prepared) == 0 {
				t.Errorf("parallelism %d: nothing was prepared ahead", parallelism)
			}
			for v, n := range prepared {
				if n > 1 {
					t.Errorf("parallelism %d: %s prepared %d times", parallelism, v, n)
				}
			}
		})
	}
}

func TestWalkAheadSkipsWhatWillNotRun(t *testing.T) {
	for _, ends := range []error{errors.New("boom"), ErrHold} {
		synctest.Test(t, func(t *testing.T) {
			// a fails (or is held) at once while r runs on: the slot a
			// frees must prepare s, below r, not b or c, below a, which
			// will never run.
			g := build("a>b", "b>c", "r>s")
			var log aheadLog
			res := g.WalkAhead(t.Context(), 2, func(_ context.Context, v string) {
				log.add("ahead " + v)
			}, func(_ context.Context, v string) error {
				switch v {
				case "a":
					return ends
				case "r":
					time.Sleep(time.Second)
				}
				return nil
			})
			for _, v := range []string{"b", "c"} {
				if log.index("ahead "+v) >= 0 {
					t.Errorf("a ended with %v, yet %s was prepared (calls %q)", ends, v, log.events)
				}
			}
			if log.index("ahead s") < 0 {
				t.Errorf("s was not prepared while r ran (calls %q)", log.events)
			}
			if got := res.Vertices["s"].Status; got != Succeeded {
				t.Errorf("s: %s, want succeeded", got)
			}
		})
	}
}

func TestWalkAheadStopsPreparingWhenCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a cancels the walk and then finishes; b's preparation saw the
		// cancellation and returned, c was never prepared, and neither ran.
		g := build("a>b", "b>c")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var log aheadLog
		bPreparing := make(chan struct{})
		res := g.WalkAhead(ctx, 2, func(ctx context.Context, v string) {
			log.add("ahead " + v)
			if v == "b" {
				close(bPreparing)
				<-ctx.Done()
			}
		}, func(_ context.Context, v string) error {
			log.add("run " + v)
			if err := await(bPreparing, "b's preparation"); err != nil {
				return err
			}
			cancel()
			return nil
		})
		got := slices.Sorted(slices.Values(log.events))
		if want := []string{"ahead b", "run a"}; !slices.Equal(got, want) {
			t.Errorf("calls = %q, want %q", got, want)
		}
		for _, v := range []string{"b", "c"} {
			if got := res.Vertices[v].Status; got != Canceled {
				t.Errorf("%s: %s, want canceled", v, got)
			}
		}
	})
}

func TestWalkAheadDropsAPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := build("a>b")
		aRan := make(chan struct{})
		res := g.WalkAhead(t.Context(), 2, func(context.Context, string) {
			panic("preparing failed")
		}, func(_ context.Context, v string) error {
			if v == "a" {
				// Let b's preparation panic before a finishes.
				time.Sleep(time.Second)
				close(aRan)
			}
			return nil
		})
		<-aRan
		checkAll(t, res, Succeeded)
	})
}
