package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
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
}

func (f *runFlags) register(cmd *cobra.Command, approve bool) {
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "environment file")
	cmd.Flags().StringArrayVarP(&f.components, "component", "c", nil, "limit to this component and what it needs (repeatable)")
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 4, "how many components run at once")
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, recorded in the audit trail")
	outputFlag(cmd, &f.output)
	if approve {
		cmd.Flags().BoolVar(&f.autoApprove, "auto-approve", false, "apply plans of components whose autoApprove is false without asking")
	}
}

func (f *runFlags) options(env *spec.Environment) engine.Options {
	return engine.Options{
		Components: f.components, Parallelism: f.parallelism, AutoApprove: f.autoApprove,
		Refresh: f.refresh, Reason: f.reason, Source: env.File,
	}
}

func newApplyCmd(d *deps) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE [-c COMP]... [--auto-approve]",
		Short: "Provision an environment: plan and apply every component in dependency order",
		Long: `Apply an environment file. Components run in dependency order, independent
ones in parallel; outputs flow to the components that take them (valueFrom).
A component whose inputs, module and tool are unchanged since its last apply
is reported "up to date" without running the tool (--refresh plans it anyway).
A component whose plan has changes and whose autoApprove is false is applied
only with --auto-approve or a "yes" at the terminal; otherwise it stops
awaiting approval and knit exits 3. spec.teardown: true tears down instead.

Exit codes: 0 applied, 1 a component failed, 3 stopped at an approval gate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(f.output); err != nil {
				return err
			}
			env, err := loadEnv(f.file, d.stderr)
			if err != nil {
				return err
			}
			opts := f.options(env)
			if !f.autoApprove && isTerminal(d.stdin) && isTerminal(d.stderr) {
				opts.Confirm = d.askApproval()
			}
			return d.runEngine(cmd.Context(), runView{output: f.output}, func(e *engine.Engine) (*engine.Result, error) {
				return e.Apply(cmd.Context(), env, opts)
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

// runEngine opens the store, builds the engine with progress on stderr,
// runs fn, and renders the result.
func (d *deps) runEngine(ctx context.Context, v runView, fn func(*engine.Engine) (*engine.Result, error)) error {
	st, dir, err := d.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	prog := newProgress(d.stderr)
	d.progress = prog
	e, err := d.newEngine(ctx, st, dir, prog.Event)
	if err != nil {
		prog.Close()
		return err
	}
	res, err := fn(e)
	prog.Close()
	if err != nil || res == nil {
		return err
	}
	if v.output == "json" {
		var doc any = res
		if v.json != nil {
			doc = v.json(res)
		}
		if err := writeJSON(d.stdout, doc); err != nil {
			return err
		}
	} else {
		printResult(d.stdout, res)
	}
	printFailureLogs(d.stderr, res)
	if ctx.Err() != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("interrupted: run %s recorded as interrupted", res.RunID)}
	}
	if v.exit != nil {
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
