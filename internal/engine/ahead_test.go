package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
)

// TestNewComponentsArePreparedWhileTheirDependenciesRun: while a runs, the
// slots it leaves idle prepare b and c (runner.Preparer), and while those
// run, d; each before its own turn, whose log starts with what preparing
// logged. Once applied, components are not prepared again.
func TestNewComponentsArePreparedWhileTheirDependenciesRun(t *testing.T) {
	h := newHarness(t)
	h.r.Ahead = true
	var mu sync.Mutex
	waiting := map[string]bool{"b": true, "c": true, "d": true}
	bcPrepared := make(chan struct{})
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		switch {
		case op == "prepare":
			mu.Lock()
			defer mu.Unlock()
			if !waiting[comp] {
				return errors.New(comp + " prepared twice, or though ready")
			}
			if delete(waiting, comp); !waiting["b"] && !waiting["c"] && comp != "d" {
				close(bcPrepared)
			}
		case op == "plan" && comp == "a":
			select {
			case <-bcPrepared:
			case <-time.After(hangGuard):
				return errors.New("b and c were not prepared while a ran")
			}
		}
		return nil
	}
	res, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester", Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied, "b": engine.Applied, "c": engine.Applied, "d": engine.Applied})
	prepared := map[string]time.Time{}
	for _, c := range h.r.Calls("prepare") {
		prepared[c.Component] = c.End
	}
	if len(prepared) != 3 || !prepared["a"].IsZero() {
		t.Errorf("prepared %v, want b, c and d", prepared)
	}
	for _, c := range h.r.Calls("plan") {
		if end, ok := prepared[c.Component]; ok && c.Start.Before(end) {
			t.Errorf("%s was planned before its preparation ended", c.Component)
		}
	}
	if log := res.Component("d").Log; !strings.HasPrefix(log, "prepared d ahead\n") || !strings.Contains(log, "planning d") {
		t.Errorf("d's log = %q, want what preparing logged, then the turn's", log)
	}

	h.r.Hook = nil
	if _, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester", Parallelism: 4}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.r.Calls("prepare")); n != 3 {
		t.Errorf("%d preparations after a second apply, want still 3: applied components are not prepared", n)
	}
}
