package cli

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// rolloutStatus is ref's newest rollout, from the library here or the
// server.
func rolloutStatus(ctx context.Context, b backend, ref string) (view.Rollout, error) {
	rb, ok := b.(*remoteBackend)
	if !ok {
		return knit.NewRollouts(b.(localBackend).Knit).Status(ctx, ref)
	}
	id, err := rb.resolve(ctx, ref)
	if err != nil {
		return view.Rollout{}, err
	}
	return rb.c.Rollout(ctx, id)
}

// steerRemote asks the server to promote, abort or retry (action) ref's
// rollout, as the token; it follows the run the server queued with
// progress on stderr, then prints where the rollout stands (-o json: the
// rollout's JSON). Its exit is the rollout's: 3 paused, 1 aborted or
// failed, or the run's when it failed.
func (d *deps) steerRemote(ctx context.Context, rb *remoteBackend, action, ref, reason, output string) error {
	id, err := rb.resolve(ctx, ref)
	if err != nil {
		return err
	}
	a, err := rb.c.SteerRollout(ctx, id, action, reason)
	if err != nil {
		return err
	}
	v := a.Rollout
	if a.RunID != "" {
		fmt.Fprintf(d.stderr, "rollout %s: run %s on the server\n", v.ID, a.RunID)
		prog := newProgress(d.stderr)
		res, rerr := rb.Run(ctx, knit.RunRequest{RunID: a.RunID, OnEvent: prog.Event})
		prog.Close()
		if res == nil {
			return rerr
		}
		printFailureLogs(d.stderr, res)
		if v, err = rb.c.Rollout(ctx, id); err != nil {
			return err
		}
	}
	if output == "json" {
		if err := writeJSON(d.stdout, v); err != nil {
			return err
		}
	} else {
		printRollout(d, v)
	}
	switch v.State {
	case knit.RolloutPaused:
		return &ExitError{Code: ExitApproval}
	case knit.RolloutAborted, knit.RolloutFailed:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("rollout %s %s: %s (knit rollout status %s)", v.ID, v.State, v.Reason, id)}
	}
	return nil
}
