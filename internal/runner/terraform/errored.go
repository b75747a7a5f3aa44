package terraform

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"knit.dev/knit/internal/runner"
)

// erroredFile is where the tool leaves the state it could not write to its
// backend (the store was unreachable past every retry, or the tool was
// stopped while writing), in the folder it ran in.
const erroredFile = "errored.tfstate"

// pushErrored moves the state the tool left in dir (erroredFile) into the
// shared backend before anything else runs for the component: what the
// tool created is then in the store, and the next plan does not create it
// again. The backend fences the push like any write (the run must hold the
// environment's lock; the serial may not move back, nor the lineage
// change). Pushed, the file is kept as erroredFile.pushed; refused as
// older than the store's state (a newer run wrote since), as
// erroredFile.refused, with a warning in the log: the store's state
// stands. Any other failure is the error: the file stays for the next run.
// shared says whether the component's state is in the backend.
func (r *Runner) pushErrored(ctx context.Context, c runner.Component, dir string, shared bool) error {
	errored := filepath.Join(dir, erroredFile)
	if !shared || !exists(errored) {
		return nil
	}
	data, err := os.ReadFile(errored)
	if err != nil {
		return err
	}
	stale, err := r.opts.States.Push(ctx, stateKey(c), c.Run, data)
	if stale {
		fmt.Fprintf(c.Log, "knit: warning: %s's %s is older than the state in knit's store, which stands (%v); kept as %s.refused\n", compName(c), errored, err, erroredFile)
		return os.Rename(errored, errored+".refused")
	}
	if err != nil {
		return fmt.Errorf("move the state the tool could not write (%s) into knit's store: %w", errored, err)
	}
	fmt.Fprintf(c.Log, "knit: moved the state the tool could not write (%s) into knit's store; kept as %s.pushed\n", errored, erroredFile)
	return os.Rename(errored, errored+".pushed")
}
