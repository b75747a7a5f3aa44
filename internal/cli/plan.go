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
			if err := checkOutput(f.output); err != nil {
				return err
			}
			v := runView{output: f.output, exit: func(r *engine.Result) error { return resultExit(r, detailed) }}
			return d.run(cmd.Context(), v, func(k *knit.Knit) (knit.RunRequest, error) {
				env, err := d.envFromArgs(cmd, k, f.file, args)
				return f.request(engine.KindPlan, env), err
			})
		},
	}
	f.register(cmd, false)
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when there are changes")
	return cmd
}

// envFromArgs loads the environment from -f FILE, or the latest applied
// revision of ENV from the store.
// envFromArgs is the environment -f FILE declares, or the applied
// revision of a known ENV.
func (d *deps) envFromArgs(cmd *cobra.Command, k *knit.Knit, file string, args []string) (*spec.Environment, error) {
	switch {
	case file != "" && len(args) > 0:
		return nil, fmt.Errorf("pass -f FILE or ENV, not both")
	case file != "":
		return loadEnv(file, d.stderr)
	case len(args) == 1:
		env, _, err := k.AppliedSpec(cmd.Context(), args[0])
		return env, err
	}
	return nil, fmt.Errorf("which environment? pass -f FILE or ENV (team/env)")
}
