package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"knit.dev/knit/internal/runner"
)

// layoutMemo keeps the layout Fingerprint collected for the plan or apply
// of the same component with the same inputs that follows it in a run:
// collecting a layout walks, reads and hashes the whole module, and doing
// it twice per component was a large part of knit's own work. An entry is
// taken once; the memo is small, so a fingerprint no plan follows (an
// unchanged component) costs little.
type layoutMemo struct {
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	inputs [sha256.Size]byte
	l      *layout
}

// maxMemo bounds the memo: a run's plans follow their fingerprints at
// once, at most its parallelism at a time.
const maxMemo = 64

// inputsKey identifies inputs (secret ones included, never kept: only
// their hash is); ok is false for inputs JSON cannot encode.
func inputsKey(in runner.Inputs) (key [sha256.Size]byte, ok bool) {
	b, err := json.Marshal(in)
	if err != nil {
		return key, false
	}
	return sha256.Sum256(b), true
}

func (m *layoutMemo) put(wd string, in runner.Inputs, l *layout) {
	key, ok := inputsKey(in)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxMemo {
		m.m = map[string]memoEntry{}
	}
	m.m[wd] = memoEntry{inputs: key, l: l}
}

// take returns and forgets the layout kept for wd with these inputs, or nil.
func (m *layoutMemo) take(wd string, in runner.Inputs) *layout {
	key, ok := inputsKey(in)
	m.mu.Lock()
	defer m.mu.Unlock()
	e, found := m.m[wd]
	delete(m.m, wd)
	if !ok || !found || e.inputs != key {
		return nil
	}
	return e.l
}

// fingerprinted is the layout of c with inputs in: the one its fingerprint
// just collected if there is one, else collected now.
func (r *Runner) fingerprinted(ctx context.Context, wd string, c runner.Component, in runner.Inputs) (*layout, error) {
	if l := r.layouts.take(wd, in); l != nil {
		return l, nil
	}
	return r.layout(ctx, c, in)
}
