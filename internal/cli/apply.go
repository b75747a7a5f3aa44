package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// runFlags are the flags shared by commands that run the engine.
type runFlags struct {
	file        string
	components  []string
	parallelism int
	autoApprove bool
	refresh     bool
	reason      string
	output      string
	// policies are folders of Rego policies that judge the run's plan;
	// overridePolicy is why an admin lets a denied run go on.
	policies       []string
	overridePolicy string
}

func (f *runFlags) register(cmd *cobra.Command, approve bool) {
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "environment file")
	cmd.Flags().StringArrayVarP(&f.components, "component", "c", nil, "limit to this component and what it needs (repeatable)")
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 4, "how many components run at once")
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, recorded in the audit trail")
	outputFlag(cmd, &f.output)
	cmd.Flags().StringArrayVar(&f.policies, "policies", nil, "folder of Rego policies (package knit) that judge the run's plan before anything applies (repeatable)")
	if approve {
		cmd.Flags().StringVar(&f.overridePolicy, "override-policy", "", "admins only: let a run a policy denies go on, for this reason (audited)")
		cmd.Flags().BoolVar(&f.autoApprove, "auto-approve", false, "apply plans of components whose autoApprove is false without asking")
	}
}

// request turns the flags into a run of kind on env (a loaded spec, or nil
// where a server resolves the environment ref names).
func (f *runFlags) request(kind store.RunKind, env *spec.Environment, ref string) knit.RunRequest {
	return knit.RunRequest{
		Kind: kind, Env: env, EnvRef: ref, Components: f.components, Parallelism: f.parallelism,
		AutoApprove: f.autoApprove, Refresh: f.refresh, Reason: f.reason,
		PolicyDirs: f.policies, OverridePolicy: f.overridePolicy,
	}
}

func newApplyCmd(d *deps) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "apply (-f FILE | ENV) [-c COMP]... [--auto-approve]",
		Short: "Provision an environment: plan and apply every component in dependency order",
		Long: `Apply an environment file. Components run in dependency order, independent
ones in parallel; outputs flow to the components that take them (valueFrom).
A component whose inputs, module and tool are unchanged since its last apply
is reported "up to date" without running the tool (--refresh plans it anyway).
A component whose plan has changes and whose autoApprove is false is applied
only with --auto-approve or a "yes" at the terminal; otherwise it stops
awaiting approval and knit exits 3. spec.teardown: true tears down instead.
ENV, instead of a file, applies a known environment at its applied revision
(with --server: the server's environment, from git).

Exit codes: 0 applied, 1 a component failed, 3 stopped at an approval gate.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(f.output); err != nil {
				return err
			}
			return d.run(cmd.Context(), runView{output: f.output}, func(b backend) (knit.RunRequest, error) {
				if err := localOnly(cmd, b, "auto-approve", "refresh", "parallelism"); err != nil {
					return knit.RunRequest{}, err
				}
				env, ref, err := d.envFromArgs(cmd, b, f.file, args)
				req := f.request(engine.KindApply, env, ref)
				if !f.autoApprove && !b.Remote() && isTerminal(d.stdin) && isTerminal(d.stderr) {
					req.Confirm = d.askApproval()
				}
				return req, err
			})
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&f.refresh, "refresh", false, "plan every component, even those whose fingerprint is unchanged")
	return cmd
}

// runView says how a command shows a run's result and which exit code it
// maps to.
type runView struct {
	output string
	// json, when set, turns the result into the JSON document to print.
	json func(*engine.Result) any
	// exit, when set, maps the result to an exit error (default: resultExit).
	exit func(*engine.Result) error
}

// run opens the backend (the library, or a server), starts the run the
// request describes with progress on stderr, waits for it, and renders the
// result.
func (d *deps) run(ctx context.Context, v runView, request func(backend) (knit.RunRequest, error)) error {
	b, err := d.backend(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	req, err := request(b)
	if err != nil {
		return err
	}
	prog := newProgress(d.stderr)
	switch {
	case req.Env != nil:
		prog.Expect(len(req.Env.Spec.Components))
	case prog.live && req.EnvRef != "": // a run of ENV: count its components for the live table
		if v, err := b.Environment(ctx, req.EnvRef); err == nil {
			prog.Expect(len(v.Components))
		}
	}
	d.progress = prog
	req.Actor, req.Source, req.OnEvent = d.actor(), "cli", prog.Event
	res, err := b.Run(ctx, req)
	prog.Close()
	if res == nil {
		return err
	}
	// A step of a rollout: the rest of it runs here too (its runs' errors
	// are the rollout's to act on: an abort turns it back).
	first := res
	res, rollout, ferr := d.followRollout(ctx, b, res)
	if res != first || ferr != nil {
		err = ferr
	}
	switch v.output {
	case "policy-input":
		if res.Policy == nil || res.Policy.Input == nil {
			if err != nil {
				return fmt.Errorf("run %s: %w", res.RunID, err)
			}
			return fmt.Errorf("no policy input: pass --policies DIR (the input is what its policies are given)")
		}
		if jerr := writeJSON(d.stdout, res.Policy.Input); jerr != nil {
			return jerr
		}
	case "json":
		var doc any = res
		if v.json != nil {
			doc = v.json(res)
		}
		if jerr := writeJSON(d.stdout, doc); jerr != nil {
			return jerr
		}
	default:
		printResult(d.stdout, res)
	}
	printFailureLogs(d.stderr, res)
	d.rollBackAfter(ctx, b, res, v.output)
	switch {
	case err != nil:
		return fmt.Errorf("run %s: %w", res.RunID, err)
	case ctx.Err() != nil:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("interrupted: run %s recorded as interrupted", res.RunID)}
	case rollout != "":
		return rolloutExit(res, rollout, nil)
	case v.exit != nil:
		return v.exit(res)
	}
	return resultExit(res, false)
}

// askApproval asks at the terminal whether to apply a component's plan,
// with the live progress table paused while the question is on screen.
func (d *deps) askApproval() func(string, *runner.Plan) bool {
	r := bufio.NewReader(d.stdin)
	return func(name string, p *runner.Plan) bool {
		if d.progress != nil {
			d.progress.Pause()
			defer d.progress.Resume()
		}
		fmt.Fprintf(d.stderr, "\n%s: plan %s\n", name, planCounts(p))
		printResources(d.stderr, 0, p)
		fmt.Fprintf(d.stderr, "Apply %s? Only 'yes' is accepted: ", name)
		line, _ := r.ReadString('\n')
		return strings.TrimSpace(line) == "yes"
	}
}
