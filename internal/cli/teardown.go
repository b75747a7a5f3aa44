package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

func newTeardownCmd(d *deps) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "teardown (-f FILE | ENV) [--auto-approve]",
		Short: "Destroy an environment's components in reverse dependency order",
		Long: `Destroy every component of an environment (or -c COMP and everything that
depends on it), each after everything that depends on it is gone. A component
with destroyProtection is refused, and so is everything it depends on.
Without --auto-approve knit asks for "yes" at the terminal, and refuses when
there is no terminal. History stays in the store.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(f.output); err != nil {
				return err
			}
			return d.run(cmd.Context(), runView{output: f.output}, func(b backend) (knit.RunRequest, error) {
				if err := localOnly(cmd, b, "parallelism"); err != nil {
					return knit.RunRequest{}, err
				}
				env, ref, err := d.envFromArgs(cmd, b, f.file, args)
				if err != nil {
					return knit.RunRequest{}, err
				}
				if !f.autoApprove {
					if err := d.confirmTeardown(cmd.Context(), b, env, ref, f.components); err != nil {
						return knit.RunRequest{}, err
					}
				}
				req := f.request(engine.KindTeardown, env, ref)
				req.AutoApprove = true // the person said yes to the whole teardown
				return req, nil
			})
		},
	}
	f.register(cmd, true)
	return cmd
}

func (d *deps) confirmTeardown(ctx context.Context, b backend, env *spec.Environment, ref string, only []string) error {
	if !isTerminal(d.stdin) {
		return fmt.Errorf("teardown of %s needs confirmation: pass --auto-approve (no terminal to ask)", ref)
	}
	g, protected, err := teardownGraph(ctx, b, env, ref)
	if err != nil {
		return err
	}
	printTeardownSteps(d.stderr, ref, g, protected, only)
	fmt.Fprintf(d.stderr, "Destroy these components of %s? Only 'yes' is accepted: ", ref)
	line, _ := bufio.NewReader(d.stdin).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		return fmt.Errorf("teardown of %s canceled", ref)
	}
	return nil
}

// teardownGraph is the dependency graph a teardown of ref walks reversed,
// and which of its components have destroyProtection: from env when the
// command has it (a file, or the applied spec here), otherwise from the
// environment's view (through a server).
func teardownGraph(ctx context.Context, b backend, env *spec.Environment, ref string) (*dag.Graph, map[string]bool, error) {
	protected := map[string]bool{}
	if env != nil {
		for _, c := range env.Spec.Components {
			protected[c.Name] = c.DestroyProtection
		}
		return env.Graph(), protected, nil
	}
	v, err := b.Environment(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	g := viewGraph(v, func(c knit.ComponentView) bool {
		protected[c.Name] = c.DestroyProtection
		return c.Status != string(engine.Destroyed)
	})
	return g, protected, nil
}

// printTeardownSteps lists what a teardown destroys, step by step (each
// step once the ones before it are gone), and what destroyProtection keeps.
func printTeardownSteps(w io.Writer, ref string, g *dag.Graph, protected map[string]bool, only []string) {
	if len(only) > 0 {
		g = g.WithDependents(only)
	}
	kept := map[string]string{}
	for _, n := range g.Vertices() {
		if protected[n] {
			kept[n] = "destroyProtection is set"
			for _, a := range g.Ancestors(n) {
				if kept[a] == "" {
					kept[a] = n + " depends on it and is kept"
				}
			}
		}
	}
	levels, err := g.Reverse().Levels()
	if err != nil {
		return // a cycle: the teardown itself reports it
	}
	fmt.Fprintf(w, "Teardown of %s destroys, in this order:\n", ref)
	step := 0
	for _, level := range levels {
		var names []string
		for _, n := range level {
			if kept[n] == "" {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			step++
			fmt.Fprintf(w, "  %d. %s\n", step, strings.Join(names, ", "))
		}
	}
	if step == 0 {
		fmt.Fprintln(w, "  nothing")
	}
	if len(kept) > 0 {
		fmt.Fprintln(w, "and keeps (refused):")
		for _, n := range slices.Sorted(maps.Keys(kept)) {
			fmt.Fprintf(w, "  %s: %s\n", n, kept[n])
		}
	}
}
