package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
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
					if err := d.confirmTeardown(ref); err != nil {
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

func (d *deps) confirmTeardown(env string) error {
	if !isTerminal(d.stdin) {
		return fmt.Errorf("teardown of %s needs confirmation: pass --auto-approve (no terminal to ask)", env)
	}
	fmt.Fprintf(d.stderr, "Destroy every component of %s? Only 'yes' is accepted: ", env)
	line, _ := bufio.NewReader(d.stdin).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		return fmt.Errorf("teardown of %s canceled", env)
	}
	return nil
}
