package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/health"
)

func newHealthCmd(d *deps) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "health ENV",
		Short: "Run an environment's health checks now and show each verdict",
		Long: `Run the health checks of the environment as applied: every applied
component's, then the environment's own, each as many times as its count
says. Prints each check's verdict (Successful, Failed, Inconclusive) and
what its last measurement saw. Exit 0 when every check is Successful, 1
otherwise. Changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				local, ok := b.(localBackend)
				if !ok {
					return errors.New("knit health runs here, against the local store: drop --server (the API has no health route yet)")
				}
				rep, err := local.Health(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if err := render(d.stdout, output, rep, printHealth); err != nil {
					return err
				}
				if rep.Verdict != health.Successful {
					return &ExitError{Code: ExitFailure}
				}
				return nil
			})
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func printHealth(w io.Writer, rep health.Report) {
	if len(rep.Results) == 0 {
		fmt.Fprintln(w, "no health checks: add health: to a component or spec.health.checks")
		return
	}
	t := newTable(w)
	fmt.Fprintln(t, "CHECK\tVERDICT\tMEASURED\tEVIDENCE\tWHY")
	for _, r := range rep.Results {
		fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%s\n", cell(r.Name()), r.Verdict, len(r.Measurements), cell(evidence(r.Last())), lastCell(r.Message))
	}
	t.Flush()
	fmt.Fprintf(w, "health: %s\n", rep.Verdict)
}

// evidence is a measurement's datum: a status code, a query's value, an
// exit code, or its message.
func evidence(m health.Measurement) string {
	switch {
	case m.StatusCode != 0 && m.Value == nil:
		return "status " + strconv.Itoa(m.StatusCode)
	case m.Value != nil:
		return "value " + strconv.FormatFloat(*m.Value, 'g', -1, 64)
	case m.ExitCode != nil:
		return "exit " + strconv.Itoa(*m.ExitCode)
	}
	return m.Message
}
