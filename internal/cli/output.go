package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

func newOutputCmd(d *deps) *cobra.Command {
	var output string
	var showSensitive bool
	cmd := &cobra.Command{
		Use:   "output ENV [COMPONENT [NAME]]",
		Short: "Show the outputs of an environment's components (sensitive values masked)",
		Long: `Show stored outputs: all of an environment's, one component's, or one value.
One value is printed raw (strings without quotes), for scripts. Sensitive
values are masked unless --show-sensitive is given.`,
		Args: cobra.RangeArgs(1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				comp := ""
				if len(args) > 1 {
					comp = args[1]
				}
				view, err := b.Outputs(cmd.Context(), args[0], comp, showSensitive)
				if err != nil {
					return err
				}
				if empty, err := noOutputs(cmd.Context(), b, args[0], view); empty != "" || err != nil {
					if err == nil {
						fmt.Fprintln(d.stderr, empty)
					}
					return err
				}
				if len(args) == 3 {
					if _, ok := view[args[1]][args[2]]; !ok {
						return fmt.Errorf("%s.%s has no output %q", args[0], args[1], args[2])
					}
				}
				if len(args) == 3 {
					return render(d.stdout, output, view[args[1]][args[2]], printRaw)
				}
				return render(d.stdout, output, view, printOutputs)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&showSensitive, "show-sensitive", false, "print sensitive values in plain text")
	return cmd
}

func printRaw(w io.Writer, o knit.OutputView) {
	if s, ok := o.Value.(string); ok {
		fmt.Fprintln(w, s)
		return
	}
	b, _ := json.Marshal(o.Value)
	fmt.Fprintln(w, string(b))
}

func printOutputs(w io.Writer, view map[string]map[string]knit.OutputView) {
	comps := make([]string, 0, len(view))
	for c := range view {
		comps = append(comps, c)
	}
	sort.Strings(comps)
	for _, c := range comps {
		names := make([]string, 0, len(view[c]))
		for n := range view[c] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b, _ := json.Marshal(view[c][n].Value)
			if view[c][n].Sensitive && view[c][n].Value == knit.Masked {
				b = []byte(knit.Masked)
			}
			fmt.Fprintf(w, "%s.%s = %s\n", c, n, b)
		}
	}
}

// noOutputs explains an empty answer (when view has no output at all): a
// torn-down environment has none any more, an error, so a script reading
// one stops there; otherwise its components declare none, a note.
func noOutputs(ctx context.Context, b backend, ref string, view map[string]map[string]knit.OutputView) (string, error) {
	for _, outs := range view {
		if len(outs) > 0 {
			return "", nil
		}
	}
	v, err := b.Environment(ctx, ref)
	if err != nil {
		return "", err
	}
	if v.Status == engine.EnvTornDown {
		return "", fmt.Errorf("%s is torn down: it has no outputs (knit history %s shows its runs)", v.ID, v.ID)
	}
	return fmt.Sprintf("%s has no outputs: no applied component of it declares one (outputs: in its file)", v.ID), nil
}
