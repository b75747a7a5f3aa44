package terraform

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"knit.dev/knit/internal/runner"
)

// ErrPlanChanged means the saved plan file is not the one that was approved:
// it was replaced by a newer plan, edited, or removed. Plan again. It wraps
// runner.ErrStalePlan.
var ErrPlanChanged = fmt.Errorf("the saved plan changed since it was made; plan again: %w", runner.ErrStalePlan)

// staleMarks are what the tool says when it refuses a saved plan before
// changing anything: the state moved since the plan, or a variable it is
// given differs from the plan's.
var staleMarks = []string{"Saved plan is stale", "Mismatch between input and plan variable value"}

// stalePlan recognises the tool's refusal of a saved plan in its output (the
// error's text carries its stderr and error diagnostics) and wraps err with
// runner.ErrStalePlan; other errors are returned as they are.
func stalePlan(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range staleMarks {
		if strings.Contains(err.Error(), m) {
			return fmt.Errorf("%s: %w: %w", m, runner.ErrStalePlan, err)
		}
	}
	return err
}

// StateLockedError means the tool could not take the state lock because
// another run holds it. The fields are the tool's lock info, where it gave
// any.
type StateLockedError struct {
	ID        string
	Path      string
	Operation string
	Who       string
	Created   string
	// Shared says the state is in knit's store (Options.States): the
	// tool's force-unlock cannot reach it.
	Shared bool
	// Err is the tool's error, stderr included.
	Err error
}

// Error names the holder and what to do.
func (e *StateLockedError) Error() string {
	var b strings.Builder
	b.WriteString("state is locked")
	if e.Who != "" {
		fmt.Fprintf(&b, " by %s", e.Who)
	}
	if e.Operation != "" {
		fmt.Fprintf(&b, " (%s", strings.TrimPrefix(e.Operation, "OperationType"))
		if e.Created != "" {
			fmt.Fprintf(&b, " since %s", e.Created)
		}
		b.WriteString(")")
	}
	b.WriteString(": another run is using this component; wait for it to finish")
	switch {
	case e.ID != "" && e.Shared:
		fmt.Fprintf(&b, "; it is taken over once the run that took it no longer holds the environment's lock (or its knit died on this machine); until then lock %s stays in knit's store", e.ID)
	case e.ID != "":
		fmt.Fprintf(&b, ", or, if it died, run force-unlock %s in the component's module folder", e.ID)
	}
	return b.String()
}

// Unwrap returns the tool's error.
func (e *StateLockedError) Unwrap() error { return e.Err }

var lockInfoLine = regexp.MustCompile(`(?m)^\s*(ID|Path|Operation|Who|Created):\s*(.*?)\s*$`)

// stateLocked recognises the tool's "Error acquiring the state lock" in its
// output (the error's text carries its stderr and error diagnostics). It is the one place knit
// reads the tool's stderr; it returns nil when the output says something else.
func stateLocked(err error) *StateLockedError {
	if err == nil || !strings.Contains(err.Error(), "Error acquiring the state lock") {
		return nil
	}
	e := &StateLockedError{Err: err}
	text := err.Error()
	if i := strings.Index(text, "Lock Info:"); i >= 0 {
		for _, m := range lockInfoLine.FindAllStringSubmatch(text[i:], -1) {
			switch m[1] {
			case "ID":
				e.ID = m[2]
			case "Path":
				e.Path = m[2]
			case "Operation":
				e.Operation = m[2]
			case "Who":
				e.Who = m[2]
			case "Created":
				e.Created = m[2]
			}
		}
	}
	return e
}

// wrap adds the operation and component to err, turning a held state lock
// into a *StateLockedError. Cancellation stays visible to errors.Is.
func wrap(op string, c runner.Component, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: interrupted: %w", op, compName(c), err)
	}
	if l := stateLocked(err); l != nil {
		l.Shared = c.WorkDir != "" && exists(filepath.Join(c.WorkDir, sharedMarker))
		return fmt.Errorf("%s %s: %w", op, compName(c), l)
	}
	return fmt.Errorf("%s %s: %w", op, compName(c), err)
}
