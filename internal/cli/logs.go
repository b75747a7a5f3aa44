package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newLogsCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs ENV COMPONENT",
		Short: "Print the tool output of a component's most recent run",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), "text", func(b backend) error {
				cr, err := b.Logs(cmd.Context(), args[0], args[1])
				if err != nil {
					return err
				}
				fmt.Fprintf(d.stderr, "# %s of %s in run %s: %s\n", cr.Operation, cr.Component, cr.RunID, cr.Status)
				fmt.Fprint(d.stdout, cr.Log)
				if cr.Log != "" && !strings.HasSuffix(cr.Log, "\n") {
					fmt.Fprintln(d.stdout) // whatever follows starts on a line of its own
				}
				return nil
			})
		},
	}
	return cmd
}
