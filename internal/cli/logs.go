package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/store"
)

func newLogsCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs ENV COMPONENT",
		Short: "Print the tool output of a component's most recent run",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withStore(cmd.Context(), "text", func(st store.Store) error {
				e, err := findEnv(cmd.Context(), st, args[0])
				if err != nil {
					return err
				}
				cr, err := st.LastComponentRun(cmd.Context(), e.ID, args[1])
				if err != nil {
					return fmt.Errorf("%s %s: %w", e.ID, args[1], err)
				}
				fmt.Fprintf(d.stderr, "# %s of %s in run %s: %s\n", cr.Operation, cr.Component, cr.RunID, cr.Status)
				fmt.Fprint(d.stdout, cr.Log)
				return nil
			})
		},
	}
	return cmd
}
