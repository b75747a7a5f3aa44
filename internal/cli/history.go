package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/view"
)

func newHistoryCmd(d *deps) *cobra.Command {
	var output string
	var limit int
	var before string
	cmd := &cobra.Command{
		Use:   "history ENV",
		Short: "List an environment's runs, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				page, err := b.History(cmd.Context(), args[0], before, limit)
				if err != nil {
					return err
				}
				if page.Next != "" && output == "text" {
					defer fmt.Fprintf(d.stderr, "more: knit history %s --before %s\n", args[0], page.Next)
				}
				return render(d.stdout, output, page.Items, printHistory)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().IntVar(&limit, "limit", 50, "how many runs (at most 1000)")
	cmd.Flags().StringVar(&before, "before", "", "runs older than this run ID (the cursor a previous page printed)")
	return cmd
}

func printHistory(w io.Writer, runs []view.Run) {
	t := newTable(w)
	defer t.Flush()
	fmt.Fprintln(t, "RUN\tKIND\tSTATUS\tREV\tACTOR\tSTARTED\tTOOK\tREASON")
	for _, r := range runs {
		took := "-"
		if !r.FinishedAt.IsZero() {
			took = r.FinishedAt.Sub(r.StartedAt).Round(10 * time.Millisecond).String()
		}
		why := r.Reason
		if r.SupersededBy != "" { // the run that replaced it, first
			why = strings.TrimSpace("superseded by " + r.SupersededBy + "; " + why)
			why = strings.TrimSuffix(why, ";")
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.Kind, cell(string(r.Status)), r.Revision, cell(r.Actor),
			r.StartedAt.Local().Format("2006-01-02 15:04:05"), took, lastCell(why))
	}
}
