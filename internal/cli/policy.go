package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/policy"
)

// defaultPolicyDir is the folder knit policy reads when none is named.
const defaultPolicyDir = "policies"

func newPolicyCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test and evaluate Rego policies (package knit: deny, warn, require_approval)",
	}
	cmd.AddCommand(newPolicyTestCmd(d), newPolicyEvalCmd(d))
	return cmd
}

func newPolicyTestCmd(d *deps) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "test [DIR]...",
		Short: "Run the Rego unit tests (test_ rules) of policy folders",
		Long: `Run the Rego unit tests (rules named test_…, in *_test.rego files or
beside the policies) of every .rego file under DIR (default: policies),
with opa test's semantics.

Exit codes (those of opa test): 0 every test passed, 1 an error (a file
that does not parse or compile, no test found), 2 a test failed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{defaultPolicyDir}
			}
			if code := policy.Test(cmd.Context(), d.stdout, timeout, args...); code != policy.TestsPassed {
				return &ExitError{Code: code}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "time bound of each test")
	return cmd
}

func newPolicyEvalCmd(d *deps) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "eval -f FILE [--policies DIR]...",
		Short: "Plan an environment and evaluate the policies on the plan, applying nothing",
		Long: `Plan every component of an environment file, changing nothing, and show
what the policies (--policies DIR, default: policies) decide about the
plan: denials, warnings, approvals they require. -o policy-input prints the
document they are given instead.

Exit codes: 0 no denial, 1 a policy denied the plan (or could not judge it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.output != "policy-input" {
				if err := checkOutput(f.output); err != nil {
					return err
				}
			}
			if len(f.policies) == 0 {
				f.policies = []string{defaultPolicyDir}
			}
			v := runView{output: f.output, exit: func(r *engine.Result) error { return resultExit(r, false) }}
			return d.run(cmd.Context(), v, func(b backend) (knit.RunRequest, error) {
				if b.Remote() {
					return knit.RunRequest{}, fmt.Errorf("knit policy eval runs locally: drop --server")
				}
				env, ref, err := d.envFromArgs(cmd, b, f.file, nil)
				return f.request(engine.KindPlan, env, ref), err
			})
		},
	}
	f.register(cmd, false)
	cmd.Flags().Lookup("output").Usage = "output format: text, json, or policy-input"
	return cmd
}
