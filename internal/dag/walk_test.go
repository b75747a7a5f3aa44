package dag

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// patience only guards against a broken walker hanging the test; no test
// asserts anything about elapsed time. Inside synctest bubbles it expires
// instantly on deadlock, because fake time only advances when every
// goroutine is blocked.
const patience = 10 * time.Second

// await waits for ch to be closed and returns an error instead of hanging.
func await(ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-time.After(patience):
		return fmt.Errorf("gave up waiting for %s", what)
	}
}

// checkAll fails the test unless every vertex has status want.
func checkAll(t *testing.T, res *WalkResult, want Status) {
	t.Helper()
	for name, r := range res.Vertices {
		if r.Status != want {
			t.Errorf("%s: status %s (err %v, reason %q), want %s", name, r.Status, r.Err, r.Reason, want)
		}
	}
}

// layered builds a DAG of layers*width vertices where each vertex depends on
// up to three vertices of the previous layer.
func layered(layers, width int) *Graph {
	g := New()
	name := func(l, i int) string { return fmt.Sprintf("v%02d_%03d", l, i) }
	for l := range layers {
		for i := range width {
			g.Add(name(l, i))
			if l == 0 {
				continue
			}
			for _, d := range []int{0, 1, 7} {
				g.Connect(name(l-1, (i+d)%width), name(l, i))
			}
		}
	}
	return g
}

func TestWalkOrderRespectsEdges(t *testing.T) {
	// A random DAG: edges only go from lower to higher numbers.
	rng := rand.New(rand.NewPCG(7, 11))
	g := New()
	for i := range 60 {
		g.Add(fmt.Sprintf("n%02d", i))
		for j := range i {
			if rng.IntN(10) == 0 {
				g.Connect(fmt.Sprintf("n%02d", j), fmt.Sprintf("n%02d", i))
			}
		}
	}
	for _, p := range []int{1, 2, 4, 16} {
		t.Run(fmt.Sprintf("parallelism=%d", p), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu            sync.Mutex
					seq           int
					start, finish = map[string]int{}, map[string]int{}
				)
				res := g.Walk(t.Context(), p, func(_ context.Context, v string) error {
					mu.Lock()
					if _, dup := start[v]; dup {
						t.Errorf("%s called twice", v)
					}
					seq++
					start[v] = seq
					mu.Unlock()
					mu.Lock()
					seq++
					finish[v] = seq
					mu.Unlock()
					return nil
				})
				if !res.OK() {
					t.Fatalf("walk not OK: %v", res.Vertices)
				}
				if len(start) != len(g.Vertices()) {
					t.Errorf("ran %d vertices, want %d", len(start), len(g.Vertices()))
				}
				for _, e := range g.Edges() {
					if finish[e.From] >= start[e.To] {
						t.Errorf("%s started (%d) before %s finished (%d)", e.To, start[e.To], e.From, finish[e.From])
					}
				}
			})
		})
	}
}

func TestWalkDiamondOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := build("a>b", "a>c", "b>d", "c>d")
		bStarted, cStarted := make(chan struct{}), make(chan struct{})
		res := g.Walk(t.Context(), 2, func(_ context.Context, v string) error {
			// b and c each refuse to finish until the other has started,
			// which only succeeds if they run at the same time.
			switch v {
			case "b":
				close(bStarted)
				return await(cStarted, "c to start")
			case "c":
				close(cStarted)
				return await(bStarted, "b to start")
			}
			return nil
		})
		checkAll(t, res, Succeeded)
	})
}

func TestWalkParallelismBound(t *testing.T) {
	const n = 20
	g := New()
	for i := range n {
		g.Add(fmt.Sprintf("v%02d", i))
	}
	tests := []struct{ parallelism, want int }{
		{-3, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 3}, {8, 8},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("parallelism=%d", tt.parallelism), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var running, peak atomic.Int32
				started := make(chan struct{}, n)
				release := make(chan struct{})
				driverDone := make(chan struct{})
				// The driver lets exactly tt.want calls pile up, then
				// releases them one at a time; an unbounded walker would
				// start more while they are parked and raise the peak.
				go func() {
					defer close(driverDone)
					got := 0
					for got < tt.want {
						<-started
						got++
					}
					for range n {
						release <- struct{}{}
						if got < n {
							<-started
							got++
						}
					}
				}()
				res := g.Walk(t.Context(), tt.parallelism, func(_ context.Context, v string) error {
					cur := running.Add(1)
					for {
						p := peak.Load()
						if cur <= p || peak.CompareAndSwap(p, cur) {
							break
						}
					}
					started <- struct{}{}
					<-release
					running.Add(-1)
					return nil
				})
				<-driverDone
				checkAll(t, res, Succeeded)
				if got := int(peak.Load()); got != tt.want {
					t.Errorf("peak concurrency = %d, want %d", got, tt.want)
				}
			})
		})
	}
}

func TestWalkStartsWhenDepsFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Levels: {a1 b1} {a2 b2} {a3}. a1 will not finish until b2 has
		// started, so a level-by-level walker (b2 waits for all of level 0,
		// including a1) deadlocks, while a dependency-driven one starts b2
		// as soon as b1 is done.
		g := build("a1>a2", "a2>a3", "b1>b2")
		b2Started := make(chan struct{})
		res := g.Walk(t.Context(), 2, func(_ context.Context, v string) error {
			switch v {
			case "a1":
				return await(b2Started, "b2 to start")
			case "b2":
				close(b2Started)
			}
			return nil
		})
		checkAll(t, res, Succeeded)
	})
}

func TestWalkCancel(t *testing.T) {
	// synctest.Test also fails if Walk leaves any goroutine behind.
	synctest.Test(t, func(t *testing.T) {
		// a and c (first alphabetically) take both slots; the context is
		// cancelled while they run.
		g := build("a>b", "c>d", "e")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		aStarted, cStarted := make(chan struct{}), make(chan struct{})
		go func() {
			<-aStarted
			<-cStarted
			cancel()
		}()
		var finished atomic.Int32
		res := g.Walk(ctx, 2, func(ctx context.Context, v string) error {
			defer finished.Add(1)
			switch v {
			case "a":
				close(aStarted)
				<-ctx.Done()
				return nil // a decides to complete despite cancellation
			case "c":
				close(cStarted)
				<-ctx.Done()
				return ctx.Err() // c decides to give up
			}
			t.Errorf("%s started after cancellation", v)
			return nil
		})
		if got := finished.Load(); got != 2 {
			t.Errorf("Walk returned with %d of 2 started calls finished", got)
		}
		want := map[string]VertexResult{
			"a": {Status: Succeeded},
			"b": {Status: Canceled, Reason: "canceled"},
			"c": {Status: Failed},
			"d": {Status: Skipped, Reason: "upstream failed: c"},
			"e": {Status: Canceled, Reason: "canceled"},
		}
		for v, w := range want {
			r := res.Vertices[v]
			if r.Status != w.Status || r.Reason != w.Reason {
				t.Errorf("%s = {%s %q}, want {%s %q}", v, r.Status, r.Reason, w.Status, w.Reason)
			}
		}
		if !errors.Is(res.Vertices["c"].Err, context.Canceled) || !errors.Is(res.Vertices["b"].Err, context.Canceled) {
			t.Errorf("vertex errors = %v / %v, want context.Canceled", res.Vertices["c"].Err, res.Vertices["b"].Err)
		}
		if !errors.Is(res.Err, context.Canceled) {
			t.Errorf("res.Err = %v, want context.Canceled", res.Err)
		}
	})
}

func TestWalkCanceledBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var calls atomic.Int32
		res := build("a>b", "c").Walk(ctx, 4, func(context.Context, string) error {
			calls.Add(1)
			return nil
		})
		if calls.Load() != 0 {
			t.Errorf("fn called %d times", calls.Load())
		}
		checkAll(t, res, Canceled)
		if !errors.Is(res.Err, context.Canceled) || res.OK() {
			t.Errorf("res.Err = %v, OK = %v", res.Err, res.OK())
		}
	})
}

func TestWalkCycle(t *testing.T) {
	g := build("a>b", "b>a", "c", "b>d")
	var calls atomic.Int32
	res := g.Walk(t.Context(), 4, func(context.Context, string) error {
		calls.Add(1)
		return nil
	})
	if calls.Load() != 0 {
		t.Errorf("fn called %d times on a cyclic graph", calls.Load())
	}
	var ce *CycleError
	if !errors.As(res.Err, &ce) {
		t.Fatalf("res.Err = %v, want *CycleError", res.Err)
	}
	const reason = "cycle: a → b → a"
	if ce.Error() != reason {
		t.Errorf("cycle error = %q, want %q", ce.Error(), reason)
	}
	checkAll(t, res, Skipped)
	for v, r := range res.Vertices {
		if r.Reason != reason {
			t.Errorf("%s: reason %q, want %q", v, r.Reason, reason)
		}
	}
	if len(res.Vertices) != 4 {
		t.Errorf("got %d results, want 4", len(res.Vertices))
	}
}

func TestWalkResultHelpers(t *testing.T) {
	tests := []struct {
		name       string
		res        WalkResult
		wantFailed []string
		wantOK     bool
	}{
		{"empty", WalkResult{Vertices: map[string]VertexResult{}}, []string{}, true},
		{"all succeeded", WalkResult{Vertices: map[string]VertexResult{
			"a": {Status: Succeeded}, "b": {Status: Succeeded},
		}}, []string{}, true},
		{"failures sorted", WalkResult{Vertices: map[string]VertexResult{
			"z": {Status: Failed}, "a": {Status: Failed}, "m": {Status: Skipped}, "b": {Status: Succeeded},
		}}, []string{"a", "z"}, false},
		{"held is not OK", WalkResult{Vertices: map[string]VertexResult{
			"a": {Status: Held},
		}}, []string{}, false},
		{"walk error is not OK", WalkResult{Vertices: map[string]VertexResult{}, Err: errBoom}, []string{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.Failed(); fmt.Sprint(got) != fmt.Sprint(tt.wantFailed) {
				t.Errorf("Failed() = %v, want %v", got, tt.wantFailed)
			}
			if got := tt.res.OK(); got != tt.wantOK {
				t.Errorf("OK() = %v, want %v", got, tt.wantOK)
			}
		})
	}
	for _, s := range []Status{Succeeded, Failed, Held, Skipped, Waiting, Canceled} {
		if s.OK() != (s == Succeeded) {
			t.Errorf("%s.OK() = %v", s, s.OK())
		}
	}
}
