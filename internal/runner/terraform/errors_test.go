package terraform

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// lockStderr is OpenTofu v1.12.6's error when another process holds the lock.
const lockStderr = `exit status 1

Error: Error acquiring the state lock

Error message: resource temporarily unavailable
Lock Info:
  ID:        64937c63-616f-ca66-e80b-9c0fc5846055
  Path:      /data/work/app/terraform.tfstate
  Operation: OperationTypeApply
  Who:       root@vm
  Version:   1.12.6
  Created:   2026-11-22 05:17:15.594661647 +0000 UTC
  Info:      


OpenTofu acquires a state lock to protect the state from being written
by multiple users at the same time.`

func TestParseStateLock(t *testing.T) {
	t.Parallel()
	got := stateLocked(errors.New(lockStderr))
	if got == nil {
		t.Fatal("lock error not recognised")
	}
	want := StateLockedError{
		ID: "64937c63-616f-ca66-e80b-9c0fc5846055", Path: "/data/work/app/terraform.tfstate",
		Operation: "OperationTypeApply", Who: "root@vm", Created: "2026-11-22 05:17:15.594661647 +0000 UTC",
	}
	got.Err = nil
	if *got != want {
		t.Errorf("stateLocked = %+v\nwant %+v", *got, want)
	}
	if msg := got.Error(); !strings.Contains(msg, "locked by root@vm (Apply since 2026-11-22") || !strings.Contains(msg, "force-unlock 64937c63") {
		t.Errorf("message = %q", msg)
	}
	if stateLocked(errors.New("exit status 1\n\nError: Unsupported argument")) != nil {
		t.Error("an unrelated error was taken for a lock")
	}
	if stateLocked(nil) != nil {
		t.Error("nil error was taken for a lock")
	}
}

func TestWrap(t *testing.T) {
	t.Parallel()
	c := runner.Component{Def: &spec.Component{Name: "vpc"}}
	err := wrap("plan", c, fmt.Errorf("tool: %w", errors.New(lockStderr)))
	var locked *StateLockedError
	if !errors.As(err, &locked) || !strings.HasPrefix(err.Error(), "plan vpc: state is locked") {
		t.Errorf("wrap(lock) = %v", err)
	}
	err = wrap("apply", c, fmt.Errorf("x: %w", context.Canceled))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "apply vpc: interrupted") {
		t.Errorf("wrap(cancel) = %v", err)
	}
	if wrap("plan", c, nil) != nil {
		t.Error("wrap(nil) is not nil")
	}
}
