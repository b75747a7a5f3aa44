package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/knit"
)

func newLogsCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs ENV COMPONENT",
		Short: "Print the tool output of a component's most recent run",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withKnit(cmd.Context(), "text", func(k *knit.Knit) error {
				cr, err := k.Logs(cmd.Context(), args[0], args[1])
				if err != nil {
					return err
				}
				fmt.Fprintf(d.stderr, "# %s of %s in run %s: %s\n", cr.Operation, cr.Component, cr.RunID, cr.Status)
				fmt.Fprint(d.stdout, cr.Log)
				return nil
			})
		},
	}
	return cmd
}
