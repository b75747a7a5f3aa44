package dag

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
)

// ErrHold is the sentinel a Walk function wraps (checked with errors.Is) to
// say "not done yet, and that is not a failure", e.g. a pending human
// approval. The vertex becomes Held and its descendants Waiting.
var ErrHold = errors.New("held")

// Status is the outcome of one vertex in a walk.
type Status string

// Vertex statuses reported by Walk.
const (
	// Succeeded means fn returned nil.
	Succeeded Status = "succeeded"
	// Failed means fn returned a non-hold error or panicked.
	Failed Status = "failed"
	// Held means fn returned an error wrapping ErrHold.
	Held Status = "held"
	// Skipped means fn was not called because an ancestor failed or the
	// graph has a cycle.
	Skipped Status = "skipped"
	// Waiting means fn was not called because an ancestor is Held.
	Waiting Status = "waiting"
	// Canceled means fn was not called because the context was done first.
	Canceled Status = "canceled"
)

// OK reports whether s is Succeeded; every other status is not OK.
func (s Status) OK() bool { return s == Succeeded }

// VertexResult is what a walk did with one vertex.
type VertexResult struct {
	Status Status
	// Err is the error fn returned (Failed, Held), the recovered panic
	// (Failed) or the context's error (Canceled); nil otherwise.
	Err error
	// Reason explains why fn was not called (Skipped, Waiting, Canceled),
	// in words for people.
	Reason string
	// Blocker is, as data, the vertex that kept this one from running: the
	// failed ancestor of a Skipped vertex, the held ancestor of a Waiting
	// one; "" otherwise (a cycle, cancellation). Callers read it, never Reason.
	Blocker string
}

// WalkResult is the outcome of a whole walk.
type WalkResult struct {
	// Vertices has an entry for every vertex of the walked graph.
	Vertices map[string]VertexResult
	// Err is a problem with the walk as a whole rather than a vertex: the
	// *CycleError for a cyclic graph, or the context's error when
	// cancellation kept vertices from starting. Vertex failures are not
	// reported here; see Failed.
	Err error
}

// WithStatus returns the sorted names of vertices with status s.
func (r *WalkResult) WithStatus(s Status) []string {
	names := []string{}
	for _, n := range sortedKeys(r.Vertices) {
		if r.Vertices[n].Status == s {
			names = append(names, n)
		}
	}
	return names
}

// Failed returns the sorted names of vertices with status Failed.
func (r *WalkResult) Failed() []string { return r.WithStatus(Failed) }

// OK reports whether every vertex succeeded and the walk itself had no
// error. A walk of an empty graph is OK.
func (r *WalkResult) OK() bool {
	if r.Err != nil {
		return false
	}
	for _, v := range r.Vertices {
		if !v.Status.OK() {
			return false
		}
	}
	return true
}

// Walk calls fn for every vertex, starting each vertex the moment all of its
// dependencies have succeeded (not level by level), with at most parallelism
// calls running at once (parallelism < 1 means 1). Among ready vertices the
// alphabetically first starts first.
//
// The walker owns failure semantics:
//   - fn returns nil: the vertex Succeeded and may unlock its dependents.
//   - fn returns an error wrapping ErrHold: the vertex is Held; descendants
//     are not run and become Waiting, Reason "waiting on <h>" and Blocker h,
//     where h is the nearest held ancestor (ties broken alphabetically).
//   - fn returns any other error or panics: the vertex Failed; descendants
//     are not run and become Skipped, Reason "upstream failed: <f>" and
//     Blocker f, where f is the alphabetically first failed ancestor. Skipped beats Waiting.
//     Unrelated branches keep running to completion.
//   - ctx is done: running calls finish (fn sees ctx and decides); vertices
//     not yet started and not already blocked by a failure or hold become
//     Canceled, Reason "canceled".
//
// Walk returns only after every fn call it started has returned, and leaves
// no goroutines behind. If g has a cycle, fn is never called, every vertex
// is Skipped with the cycle error text as Reason, and Err is the
// *CycleError. g must not be mutated during the walk.
func (g *Graph) Walk(ctx context.Context, parallelism int, fn func(ctx context.Context, v string) error) *WalkResult {
	return g.WalkAhead(ctx, parallelism, nil, fn)
}

// WalkAhead is Walk that also prepares vertices ahead of their turn: while
// a slot is free and no vertex is ready, it calls ahead (if not nil) for a
// vertex of the next wave, one whose dependencies have all started but not
// all succeeded yet (the first in topological order, skipping any below a
// failure or a hold), so that its fn finds it prepared: a component's tool
// initialised while its dependencies are still being applied. An ahead
// call takes one of the parallelism slots like an fn call, and a vertex's
// fn starts only after its ahead call returned. What ahead does is its own
// affair: it returns nothing, a panic in it is dropped, and a vertex whose
// ahead failed still gets its fn call, which does whatever ahead left
// undone. No ahead call starts once ctx is done, and WalkAhead returns only
// after every ahead call has returned too.
func (g *Graph) WalkAhead(ctx context.Context, parallelism int, ahead func(ctx context.Context, v string), fn func(ctx context.Context, v string) error) *WalkResult {
	ix := g.snapshot()
	res := &WalkResult{Vertices: make(map[string]VertexResult, len(ix.names))}
	order, ok := ix.topoOrder()
	if !ok {
		cerr := &CycleError{Cycles: ix.cycles(MaxCycles)}
		for _, n := range ix.names {
			res.Vertices[n] = VertexResult{Status: Skipped, Reason: cerr.Error()}
		}
		res.Err = cerr
		return res
	}
	w := &walker{
		ix:     ix,
		status: make([]Status, len(ix.names)),
		errs:   make([]error, len(ix.names)),
	}
	w.run(ctx, max(parallelism, 1), order, ahead, fn)
	w.settle(ctx, order, res)
	return res
}

// outcome is one finished fn call (or ahead call), sent from its goroutine
// to the walker.
type outcome struct {
	v     int
	err   error
	ahead bool
}

// walker holds the mutable state of one Walk. Only the goroutine running
// Walk touches it; fn goroutines communicate solely through a channel.
type walker struct {
	ix     *indexed
	status []Status // "" until the vertex has run or been settled
	errs   []error
}

// run starts vertices as they become ready and collects their outcomes
// until nothing is running and nothing more may start. With ahead set,
// idle slots prepare vertices that are not ready yet (see WalkAhead).
func (w *walker) run(ctx context.Context, parallelism int, order []int, ahead func(context.Context, string), fn func(context.Context, string) error) {
	n := len(w.ix.names)
	// Buffered for every fn and ahead call so a finishing goroutine never
	// blocks on send, whatever the walker is doing: no goroutine can leak.
	results := make(chan outcome, 2*n)
	remaining := make([]int, n) // dependencies not yet succeeded
	ready := &intHeap{}
	for v := range n {
		remaining[v] = len(w.ix.pred[v])
		if remaining[v] == 0 {
			heap.Push(ready, v)
		}
	}
	pre := newPreparer(w.ix, order, ahead)
	running := 0
	done := ctx.Done()
	for {
		for running < parallelism && ctx.Err() == nil {
			if ready.Len() > 0 {
				v := heap.Pop(ready).(int)
				pre.started(v)
				running++
				go func() { results <- outcome{v: v, err: call(ctx, fn, w.ix.names[v])} }()
				continue
			}
			v := pre.take()
			if v < 0 {
				break
			}
			running++
			go func() {
				callAhead(ctx, ahead, w.ix.names[v])
				results <- outcome{v: v, ahead: true}
			}()
		}
		if running == 0 {
			return
		}
		select {
		case o := <-results:
			running--
			switch {
			case o.ahead:
				if pre.prepared(o.v) {
					heap.Push(ready, o.v)
				}
			case o.err == nil:
				w.status[o.v] = Succeeded
				for _, s := range w.ix.succ[o.v] {
					remaining[s]--
					if remaining[s] == 0 && pre.mayStart(s) {
						heap.Push(ready, s)
					}
				}
			case errors.Is(o.err, ErrHold):
				w.status[o.v], w.errs[o.v] = Held, o.err
				pre.block(o.v)
			default:
				// Dependents of a failure never reach remaining == 0, so
				// they are never started; settle labels them afterwards.
				w.status[o.v], w.errs[o.v] = Failed, o.err
				pre.block(o.v)
			}
		case <-done:
			// Wake up to stop starting new vertices; a nil channel keeps
			// this case from firing again while running calls drain.
			done = nil
		}
	}
}

// preparer tracks WalkAhead's ahead calls for the walker: which vertex to
// prepare next, and which ready vertices must wait for theirs to return.
// With no ahead function it never proposes a vertex.
//
// Only the next wave is prepared: a vertex whose dependencies have all
// started. Looking further ahead would fill idle slots with work for
// vertices far from ready, which a vertex that becomes ready meanwhile
// would have to wait for, and which a failure upstream may waste.
type preparer struct {
	ix    *indexed
	ahead func(context.Context, string)
	state []prepState
	// waiting counts, per vertex, the dependencies that have not started.
	waiting []int
	// next holds vertices whose dependencies have all started, by their
	// position in topological order (pos), earliest first.
	next  intHeap
	order []int
	pos   []int
}

type prepState uint8

const (
	unprepared prepState = iota
	preparing            // an ahead call is running
	parked               // ready, waiting for its ahead call to return
	settled              // started, prepared, or blocked: nothing to do ahead
)

func newPreparer(ix *indexed, order []int, ahead func(context.Context, string)) *preparer {
	n := len(ix.names)
	p := &preparer{ix: ix, ahead: ahead, state: make([]prepState, n), waiting: make([]int, n), order: order, pos: make([]int, n)}
	for i, v := range order {
		p.pos[v] = i
	}
	for v := range n {
		p.waiting[v] = len(ix.pred[v])
	}
	return p
}

// take returns the vertex to prepare now and marks it preparing, or -1.
func (p *preparer) take() int {
	if p.ahead == nil {
		return -1
	}
	for p.next.Len() > 0 {
		if v := p.order[heap.Pop(&p.next).(int)]; p.state[v] == unprepared {
			p.state[v] = preparing
			return v
		}
	}
	return -1
}

// started notes that v's fn was called: its dependents may now be next.
func (p *preparer) started(v int) {
	p.state[v] = settled
	if p.ahead == nil {
		return
	}
	for _, s := range p.ix.succ[v] {
		if p.waiting[s]--; p.waiting[s] == 0 && p.state[s] == unprepared {
			heap.Push(&p.next, p.pos[s])
		}
	}
}

// mayStart reports whether v, just ready, may start now; if its ahead
// call is still running it is parked until prepared returns true for it.
func (p *preparer) mayStart(v int) bool {
	if p.state[v] == preparing {
		p.state[v] = parked
		return false
	}
	return true
}

// prepared notes that v's ahead call returned; true if v is ready and
// waited for it, so it may start now.
func (p *preparer) prepared(v int) bool {
	wasParked := p.state[v] == parked
	p.state[v] = settled
	return wasParked
}

// block marks every vertex downstream of v, which failed or is held, as
// not worth preparing: none of them will run in this walk.
func (p *preparer) block(v int) {
	if p.ahead == nil {
		return
	}
	seen := make([]bool, len(p.state))
	stack := append([]int(nil), p.ix.succ[v]...)
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[u] {
			continue
		}
		seen[u] = true
		if p.state[u] == unprepared {
			p.state[u] = settled
		}
		stack = append(stack, p.ix.succ[u]...)
	}
}

// settle labels every vertex that never ran. It works from final statuses
// in topological order, so the labels do not depend on the timing of the
// walk, only on which vertices ran and how they ended.
func (w *walker) settle(ctx context.Context, order []int, res *WalkResult) {
	n := len(w.ix.names)
	failedSrc := make([]string, n) // alphabetically first failed ancestor (or self)
	holdDist := make([]int, n)     // distance to nearest held ancestor (0 = self)
	holdName := make([]string, n)  // name of that ancestor, "" if none
	for _, v := range order {
		name := w.ix.names[v]
		switch w.status[v] {
		case Succeeded:
			res.Vertices[name] = VertexResult{Status: Succeeded}
			continue
		case Failed:
			failedSrc[v] = name
			res.Vertices[name] = VertexResult{Status: Failed, Err: w.errs[v]}
			continue
		case Held:
			holdName[v] = name
			res.Vertices[name] = VertexResult{Status: Held, Err: w.errs[v]}
			continue
		}
		for _, p := range w.ix.pred[v] {
			if f := failedSrc[p]; f != "" && (failedSrc[v] == "" || f < failedSrc[v]) {
				failedSrc[v] = f
			}
			if h := holdName[p]; h != "" {
				d := holdDist[p] + 1
				if holdName[v] == "" || d < holdDist[v] || (d == holdDist[v] && h < holdName[v]) {
					holdName[v], holdDist[v] = h, d
				}
			}
		}
		switch {
		case failedSrc[v] != "":
			w.status[v] = Skipped
			res.Vertices[name] = VertexResult{Status: Skipped, Reason: "upstream failed: " + failedSrc[v], Blocker: failedSrc[v]}
		case holdName[v] != "":
			w.status[v] = Waiting
			res.Vertices[name] = VertexResult{Status: Waiting, Reason: "waiting on " + holdName[v], Blocker: holdName[v]}
		default:
			// Nothing upstream blocked it, so only cancellation can have
			// kept it from running.
			w.status[v] = Canceled
			res.Vertices[name] = VertexResult{Status: Canceled, Err: ctx.Err(), Reason: "canceled"}
			res.Err = ctx.Err()
		}
	}
}

// call runs fn, turning a panic into an error so one broken vertex fails
// like any other instead of crashing the whole process.
func call(ctx context.Context, fn func(context.Context, string) error, v string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("vertex %q panicked: %v", v, r)
		}
	}()
	return fn(ctx, v)
}

// callAhead runs ahead, dropping a panic: preparing is an optimisation,
// and the vertex's own call will meet whatever went wrong.
func callAhead(ctx context.Context, ahead func(context.Context, string), v string) {
	defer func() { _ = recover() }()
	ahead(ctx, v)
}

// intHeap is a min-heap of vertex indices; since indices follow name order,
// the ready vertex popped first is the alphabetically first one.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
