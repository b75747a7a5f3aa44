package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

func newPlanCmd(d *deps) *cobra.Command {
	var f runFlags
	var detailed bool
	cmd := &cobra.Command{
		Use:   "plan (-f FILE | ENV) [-c COMP]... [--detailed-exitcode]",
		Short: "Show what apply would change, component by component, changing nothing",
		Long: `Plan every component of an environment (or -c COMP and what it needs)
against reality. A component whose inputs come from a component not yet
applied is shown as "known after apply".

Exit codes: 0 no changes (or any outcome without --detailed-exitcode),
1 error, 2 changes present (with --detailed-exitcode).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.output != "policy-input" {
				if err := checkOutput(f.output); err != nil {
					return err
				}
			}
			v := runView{output: f.output, exit: func(r *engine.Result) error { return resultExit(r, detailed) }}
			return d.run(cmd.Context(), v, func(b backend) (knit.RunRequest, error) {
				if err := localOnly(cmd, b, "parallelism"); err != nil {
					return knit.RunRequest{}, err
				}
				env, ref, err := d.envFromArgs(cmd, b, f.file, args)
				return f.request(engine.KindPlan, env, ref), err
			})
		},
	}
	f.register(cmd, false)
	cmd.Flags().Lookup("output").Usage = "output format: text, json, or policy-input (the document --policies judge)"
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when there are changes")
	return cmd
}

// envFromArgs is the environment -f FILE declares, or the applied
// revision of a known ENV, with its team/env ID. A server resolves ENV
// itself (nil spec) and takes no files.
func (d *deps) envFromArgs(cmd *cobra.Command, b backend, file string, args []string) (*spec.Environment, string, error) {
	switch {
	case file != "" && len(args) > 0:
		return nil, "", fmt.Errorf("pass -f FILE or ENV, not both")
	case file != "" && b.Remote():
		return nil, "", fmt.Errorf("-f FILE does not work with --server: the server takes environments from git; commit the file and name the environment (team/env)")
	case file != "":
		env, err := d.loadEnv(file)
		if err != nil {
			return nil, "", err
		}
		return env, env.ID(), nil
	case len(args) == 1:
		return b.Target(cmd.Context(), args[0])
	}
	return nil, "", fmt.Errorf("which environment? pass -f FILE or ENV (team/env)")
}

// localOnly refuses, on a server, the flags set that only a local run honours.
func localOnly(cmd *cobra.Command, b backend, flags ...string) error {
	if !b.Remote() {
		return nil
	}
	for _, name := range flags {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s does not work with --server: the server runs with its own settings (approve waiting plans with knit approve)", name)
		}
	}
	return nil
}
