package health

import (
	"context"
	"fmt"
	"sync"
)

// Target is one check to run in a verification, and whose it is: a
// component's name, or "" for the environment's own checks.
type Target struct {
	Component string
	Check     Check
	// Broken, when set, is why the check could not be set up (an output
	// its URL reads is missing): the target is Failed without measuring.
	Broken error
	// Decided, when set, is a result known without measuring (a tool's
	// own check that failed during the apply).
	Decided *Result
}

// TargetResult is one target's result.
type TargetResult struct {
	Component string `json:"component,omitempty"`
	Result
}

// Name is the check's name as people read it: component/check, or the
// check alone for the environment's.
func (r TargetResult) Name() string {
	if r.Component == "" {
		return r.Check
	}
	return r.Component + "/" + r.Check
}

// Report is a verification: every target's result, in the targets'
// order, and the worst verdict among them (Successful when there is none).
type Report struct {
	Verdict Verdict        `json:"verdict"`
	Results []TargetResult `json:"results"`
}

// Worst is the first result with the report's verdict: what a failed
// verification is reported with.
func (r Report) Worst() (TargetResult, bool) {
	for _, t := range r.Results {
		if t.Verdict == r.Verdict {
			return t, true
		}
	}
	return TargetResult{}, false
}

// Summary says the report's verdict and, unless Successful, which check
// decided it and what it saw.
func (r Report) Summary() string {
	w, ok := r.Worst()
	if r.Verdict == Successful || !ok {
		return fmt.Sprintf("verification %s (%d checks)", r.Verdict, len(r.Results))
	}
	s := fmt.Sprintf("verification %s: health check %s: %s", r.Verdict, w.Name(), w.Message)
	if m := w.Last(); m.Message != "" {
		s += ": " + m.Message
	}
	return s
}

// Runner runs verifications on a clock.
type Runner struct {
	Clock Clock
}

// Verify runs every target's check at once and waits for all: a failing
// check does not stop the others, so the report holds every verdict. When
// ctx ends, unfinished checks are Inconclusive (Cancelled).
func (r Runner) Verify(ctx context.Context, targets []Target) Report {
	clock := r.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	rep := Report{Verdict: Successful, Results: make([]TargetResult, len(targets))}
	var wg sync.WaitGroup
	for i, t := range targets {
		rep.Results[i].Component = t.Component
		if t.Decided != nil {
			rep.Results[i].Result = *t.Decided
			continue
		}
		if t.Broken != nil {
			rep.Results[i].Result = Result{Check: t.Check.Name, Verdict: Failed, Reason: ReasonBroken, Message: t.Broken.Error()}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Results[i].Result, _ = Run(ctx, clock, t.Check)
		}()
	}
	wg.Wait()
	for _, t := range rep.Results {
		if Worse(t.Verdict, rep.Verdict) {
			rep.Verdict = t.Verdict
		}
	}
	return rep
}
