package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	kprogress "knit.dev/knit/internal/progress"
	"knit.dev/knit/internal/view"
)

func newPreviewsCmd(d *deps) *cobra.Command {
	var output, branch, commit string
	cmd := &cobra.Command{
		Use:   "previews --branch BRANCH [--commit HASH]",
		Short: "Show what a branch's pushed commits would do to the environments they change",
		Long: `knit serve --preview-branches 'feature/*' plans every environment a new head of a
matching branch changes, against what the environment has applied, and never applies it.
knit previews --branch B lists those previews, newest first: per environment its change
(create, update, destroy), per component ~changed +added -destroyed, the policies'
decisions and the plan's checksum (the apply of the merge shows the same one when
nothing moved in between). With --server, a token limited to teams sees only its teams'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if branch == "" {
				return errors.New("--branch is required: knit previews --branch feature/x")
			}
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				ps, err := b.Previews(cmd.Context(), branch, commit)
				if err != nil {
					return err
				}
				return render(d.stdout, output, ps, printPreviews)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&branch, "branch", "", "the branch")
	cmd.Flags().StringVar(&commit, "commit", "", "only this commit's previews (full hash)")
	return cmd
}

func printPreviews(w io.Writer, ps []view.Preview) {
	if len(ps) == 0 {
		fmt.Fprintln(w, "no previews")
		return
	}
	for _, p := range ps {
		fmt.Fprintf(w, "%s: %s at %s, %s", p.Env, p.Change, p.Short(), p.Status)
		if p.Checksum != "" {
			fmt.Fprintf(w, " (checksum %s)", p.Checksum[:min(12, len(p.Checksum))])
		}
		fmt.Fprintln(w)
		if p.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", firstLine(p.Error))
		}
		printPlanned(w, p.Components, p.Decisions)
	}
}

// printPlanned prints the components and policy decisions of a plan
// that applies nothing (a preview, a stage of a release plan).
func printPlanned(w io.Writer, cs []view.PreviewComponent, ds []kprogress.Decision) {
	for _, c := range cs {
		fmt.Fprintf(w, "  %-20s %-12s %s\n", c.Name, c.Status, c.Counts())
	}
	for _, dec := range ds {
		fmt.Fprintf(w, "  %s: %s\n", dec.Kind, dec.String())
	}
}
