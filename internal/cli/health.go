package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/view"
)

func newHealthCmd(d *deps) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "health ENV",
		Short: "Run an environment's health checks now and show each verdict",
		Long: `Run the health checks of the environment as applied: every applied
component's, then the environment's own, each as many times as its count
says. Prints each check's verdict (Successful, Failed, Inconclusive) and
what its last measurement saw, and keeps it as the environment's last
health check (knit status shows it). With --server, the server runs them.
Exit 0 when every check is Successful, 1 otherwise.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				h, err := b.Health(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if err := render(d.stdout, output, h, printHealth); err != nil {
					return err
				}
				if h.Verdict != "Successful" {
					return &ExitError{Code: ExitFailure}
				}
				return nil
			})
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func printHealth(w io.Writer, h view.Health) {
	if len(h.Checks) == 0 {
		fmt.Fprintln(w, "no health checks: add health: to a component or spec.health.checks")
		return
	}
	t := newTable(w)
	fmt.Fprintln(t, "CHECK\tVERDICT\tMEASURED\tEVIDENCE\tWHY")
	for _, c := range h.Checks {
		fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%s\n", cell(checkName(c)), c.Verdict, c.Measured, cell(c.Evidence), lastCell(c.Message))
	}
	t.Flush()
	fmt.Fprintf(w, "health: %s\n", h.Verdict)
}

// checkName is a check's name as people read it: component/check, or the
// check alone for the environment's.
func checkName(c view.HealthCheck) string {
	if c.Component == "" {
		return c.Name
	}
	return c.Component + "/" + c.Name
}
