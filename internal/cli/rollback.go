package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

func newRollbackCmd(d *deps) *cobra.Command {
	var to int
	var reason, output string
	cmd := &cobra.Command{
		Use:   "rollback ENV [--to REV] [--reason …]",
		Short: "Go back to the last revision whose verification succeeded",
		Long: `Start a run of kind rollback: it re-applies the last revision of ENV whose
health checks succeeded after its apply (or that a person accepted), or revision
--to REV. Only the components that differ from it run, in dependency order; the
components that revision lacks are destroyed, gated like any destroy (they wait
for approval unless the environment's rollout.autoApprove is true). The run is
audited, judged by policy like any run, and verified by the health checks of
the revision it goes back to; a rollback whose verification fails does not roll
back again.

With nothing to go back to, knit says so and changes nothing.

Exit codes: 0 rolled back, 1 a component or the verification failed, 3 a destroy
waits for approval.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if to < 0 {
				return fmt.Errorf("--to %d: name a revision (knit history %s lists them)", to, args[0])
			}
			return d.run(cmd.Context(), runView{output: output}, func(backend) (knit.RunRequest, error) {
				return knit.RunRequest{Kind: engine.KindRollback, EnvRef: args[0], To: to, Reason: reason}, nil
			})
		},
	}
	cmd.Flags().IntVar(&to, "to", 0, "the revision to go back to (default: the last whose verification succeeded)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the audit trail")
	outputFlag(cmd, &output)
	return cmd
}

// rollBackAfter runs, here in the foreground, the rollback that follows a
// local apply whose verification failed (rollout.onFailure: rollback). A
// server runs it itself. It reports how the rollback went on stderr; the
// apply's own exit code stands. Its result goes to stdout beside a text
// result, to stderr beside a JSON one (stdout stays one JSON document).
func (d *deps) rollBackAfter(ctx context.Context, b backend, res *engine.Result, output string) {
	req := knit.After(knit.RunRequest{}, res, d.actor()).Rollback
	if req == nil || b.Remote() || ctx.Err() != nil {
		if res != nil && res.Rollout == engine.RolloutPaused && !b.Remote() {
			fmt.Fprintf(d.stderr, "%s is paused: knit approve %s accepts revision %d, knit rollback %s goes back\n", res.Env, res.Env, res.Revision, res.Env)
		}
		return
	}
	fmt.Fprintf(d.stderr, "rolling %s back (rollout.onFailure: rollback): %s\n", res.Env, req.Reason)
	prog := newProgress(d.stderr)
	req.OnEvent = prog.Event
	rb, err := b.Run(ctx, *req)
	prog.Close()
	switch {
	case rb == nil && errors.Is(err, knit.ErrNoGoodRevision):
		fmt.Fprintf(d.stderr, "not rolled back: %v\n", err)
	case rb == nil:
		fmt.Fprintf(d.stderr, "the rollback did not start: %v\n", err)
	default:
		out := d.stdout
		if output != "" && output != "text" {
			out = d.stderr
		}
		printResult(out, rb)
		printFailureLogs(d.stderr, rb)
		if err != nil {
			fmt.Fprintf(d.stderr, "rollback run %s: %v\n", rb.RunID, err)
		}
	}
}

// accept is knit approve ENV: a person accepts ENV's paused rollout.
func (d *deps) accept(ctx context.Context, ref, reason string) error {
	return d.withBackend(ctx, "text", func(b backend) error {
		e, err := b.Accept(ctx, ref, d.actor(), reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(d.stdout, "%s: revision %d accepted; %s is %s\n", e.ID, e.AppliedRevision, e.ID, engine.EnvLabel(e.Status))
		return nil
	})
}
