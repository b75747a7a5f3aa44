package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

func newRolloutCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer an environment's rollout by its strategy (canary, blueGreen)",
		Long: `An apply that changes the components a strategy marks, in an environment
already applied, rolls out step by step (spec.rollout.strategy). These commands
show where the rollout stands and steer it:

  knit rollout status ENV     its state, step, weight and each step's evidence
  knit rollout promote ENV    go on past a pause that waits for a person
  knit rollout abort ENV      weight 0, the canary destroyed, back to the stable revision
  knit rollout retry ENV      a failed rollout: its failed run again, at the same step
                              and weight; an aborted one: again from its first step, of
                              the same revision from the same stable revision

Each is audited as you and leads to runs judged by policy and gated like any
run. Here promote, abort and retry run the rollout's next runs in the
foreground, as knit apply does; with --server the server runs them, and the
command follows the first and prints where the rollout then stands.

Exit codes: 0 done, 1 error or the rollout aborted or failed, 3 paused (knit rollout promote goes on).`,
	}
	var output, reason string
	status := &cobra.Command{
		Use: "status ENV", Short: "Where ENV's rollout stands", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := d.backend(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			v, err := rolloutStatus(cmd.Context(), b, args[0])
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(d.stdout, v)
			}
			printRollout(d, v)
			return nil
		},
	}
	outputFlag(status, &output)
	steer := func(use, short string, act func(r *knit.Rollouts, ctx context.Context, ref string) (knit.RolloutAction, error)) *cobra.Command {
		c := &cobra.Command{
			Use: use + " ENV [--reason …]", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				b, err := d.backend(cmd.Context())
				if err != nil {
					return err
				}
				defer b.Close()
				if rb, ok := b.(*remoteBackend); ok {
					return d.steerRemote(cmd.Context(), rb, use, args[0], reason, output)
				}
				lb := b.(localBackend)
				a, err := act(knit.NewRollouts(lb.Knit), cmd.Context(), args[0])
				if err != nil {
					return err
				}
				res, done, err := d.carryOn(cmd.Context(), lb, a, nil)
				if res != nil && output == "json" {
					if jerr := writeJSON(d.stdout, res); jerr != nil {
						return jerr
					}
				} else if res != nil {
					printResult(d.stdout, res)
				}
				return rolloutExit(res, done, err)
			},
		}
		c.Flags().StringVar(&reason, "reason", "", "why, recorded in the audit trail")
		outputFlag(c, &output)
		return c
	}
	cmd.AddCommand(status,
		steer("promote", "Go on past the pause ENV's rollout waits at", func(r *knit.Rollouts, ctx context.Context, ref string) (knit.RolloutAction, error) {
			return r.Promote(ctx, ref, d.actor(), reason)
		}),
		steer("abort", "Turn ENV's rollout back to the stable revision", func(r *knit.Rollouts, ctx context.Context, ref string) (knit.RolloutAction, error) {
			return r.Abort(ctx, ref, d.actor(), reason)
		}),
		steer("retry", "Run ENV's failed or aborted rollout again", func(r *knit.Rollouts, ctx context.Context, ref string) (knit.RolloutAction, error) {
			return r.Retry(ctx, ref, d.actor(), reason)
		}))
	return cmd
}

func printRollout(d *deps, v knit.RolloutView) {
	fmt.Fprintf(d.stdout, "%s: rollout %s %s at step %d of %d, weight %d (stable revision %d)\n", v.Env, v.ID, v.State, v.Step, v.Steps, v.Weight, v.Stable)
	if len(v.Plan) > 0 {
		steps := make([]string, len(v.Plan))
		for i, p := range v.Plan {
			steps[i] = p.String()
			if i == v.Step {
				steps[i] = "[" + steps[i] + "]"
			}
		}
		fmt.Fprintf(d.stdout, "  %s: %s\n", v.Strategy, strings.Join(steps, " → "))
	}
	if v.Reason != "" {
		fmt.Fprintf(d.stdout, "  %s\n", v.Reason)
	}
	for _, e := range v.Evidence {
		fmt.Fprintf(d.stdout, "  step %d %-8s weight %3d  run %s %s", e.Step, e.Phase, e.Weight, e.RunID, e.Status)
		if e.Verification != "" {
			fmt.Fprintf(d.stdout, ": %s", e.Verification)
		}
		fmt.Fprintln(d.stdout)
	}
}

// followRollout carries on, here in the foreground, the rollout the run
// res may be a step of (a local backend only: a server carries its own
// on). It returns the last run's result and the rollout's end state
// ("": not a rollout, or paused).
func (d *deps) followRollout(ctx context.Context, b backend, res *engine.Result) (*engine.Result, string, error) {
	lb, ok := b.(localBackend)
	if !ok || res == nil || ctx.Err() != nil {
		return res, "", nil
	}
	a, err := knit.NewRollouts(lb.Knit).Next(ctx, knit.RunRequest{}, res)
	if err != nil {
		return res, "", err
	}
	return d.carryOn(ctx, lb, a, res)
}

// carryOn runs a rollout's actions one after the other until it pauses
// for a person or ends.
func (d *deps) carryOn(ctx context.Context, lb localBackend, a knit.RolloutAction, res *engine.Result) (*engine.Result, string, error) {
	ro := knit.NewRollouts(lb.Knit)
	for {
		var err error
		switch {
		case a.Run != nil:
			fmt.Fprintf(d.stderr, "%s\n", a.Run.Reason)
			prog := newProgress(d.stderr)
			req := *a.Run
			req.OnEvent = prog.Event
			next, rerr := lb.Run(ctx, req)
			prog.Close()
			if next == nil {
				return res, "", rerr
			}
			res = next
			printFailureLogs(d.stderr, res)
			if ctx.Err() != nil {
				return res, "", nil
			}
			a, err = ro.Next(ctx, req, res)
		case !a.Until.IsZero():
			fmt.Fprintf(d.stderr, "rollout pauses until %s\n", a.Until.Format(time.RFC3339))
			t := time.NewTimer(time.Until(a.Until))
			select {
			case <-ctx.Done():
				t.Stop()
				return res, "", nil
			case <-t.C:
			}
			if res != nil {
				a, err = ro.Continue(ctx, res.Env)
			}
		case a.Paused:
			fmt.Fprintf(d.stderr, "rollout paused: knit rollout promote %s goes on, knit rollout abort %s turns it back\n", envOf(res), envOf(res))
			return res, knit.RolloutPaused, nil
		default:
			if a.Done != "" {
				fmt.Fprintf(d.stderr, "rollout %s\n", a.Done)
			}
			return res, a.Done, nil
		}
		if err != nil {
			return res, "", err
		}
	}
}

func envOf(res *engine.Result) string {
	if res == nil {
		return "ENV"
	}
	return res.Env
}

// rolloutExit is the exit of a command that carried a rollout on: 3
// paused, 1 aborted or failed, else the last run's.
func rolloutExit(res *engine.Result, state string, err error) error {
	switch {
	case err != nil:
		return err
	case state == knit.RolloutPaused:
		return &ExitError{Code: ExitApproval}
	case state == knit.RolloutAborted || state == knit.RolloutFailed:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("rollout %s: the environment stays on its stable revision (knit rollout status %s)", state, envOf(res))}
	case res == nil:
		return nil
	}
	return resultExit(res, false)
}
